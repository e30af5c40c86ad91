/**
 * Every function's current body now lives in db/functions/<name>.sql (FunctionFiles.ts): this installs them
 * all from there, the same text the migrations before it left, so that from here on the files are the truth.
 */
import { FUNCTION_NAMES, installFunctions } from "../functions/FunctionFiles.ts"

export default installFunctions(FUNCTION_NAMES)

/** The console's entry point: mounts the app into index.html's #app. */
import { render } from "preact"
import { App } from "./App.tsx"
import "./styles.css"

const root = document.getElementById("app")
if (root !== null) {
  root.replaceChildren()
  render(<App />, root)
}

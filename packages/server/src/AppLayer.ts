/** The composition root's layers: database (migrated and seeded), services, the HTTP surface. */
import { Effect, Layer } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { Connections } from "./accounts/Connections.ts"
import { Access } from "./auth/Access.ts"
import { KeyStore } from "./auth/KeyStore.ts"
import { People } from "./auth/People.ts"
import { SecretBox } from "./auth/SecretBox.ts"
import { Sessions } from "./auth/Sessions.ts"
import { bootstrap } from "./db/Bootstrap.ts"
import { DatabaseLive } from "./db/Database.ts"
import { runMigrations } from "./db/Migrations.ts"
import { HttpServerLive } from "./http/HttpServerLive.ts"
import { RateLimits } from "./limits/RateLimits.ts"
import { OrgSettings } from "./settings/Settings.ts"

/** Services over the database, with nothing above them. */
export const ServicesLive = Layer.mergeAll(
  Access.Default,
  KeyStore.Default,
  Sessions.Default,
  People.Default,
  OrgSettings.Default,
  Connections.Default,
  SecretBox.Default
).pipe(Layer.provideMerge(Accounts.Default), Layer.provideMerge(RateLimits.Default))

/** The database, migrated and seeded before anything else may use it. */
export const MigratedDatabaseLive = Layer.effectDiscard(
  runMigrations(bootstrap).pipe(Effect.provide(Layer.mergeAll(KeyStore.Default, People.Default).pipe(Layer.provide(Accounts.Default))))
).pipe(Layer.provideMerge(DatabaseLive))

export const AppLive = HttpServerLive.pipe(Layer.provide(ServicesLive), Layer.provide(MigratedDatabaseLive))

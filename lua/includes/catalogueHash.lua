-- The catalogue hash: each product's number both ways and the last number given. Field names
-- (and prefixes) defined here only; TypeScript: CATALOGUE_FIELD of
-- src/inventory/records/hash-fields.ts (test/lua-records.test.ts holds them equal). The loader
-- folds the constants (src/redis/scripts.ts).
-- the last number given
local CATALOGUE_SEQ = 'seq'
-- n:<number> -> product id
local CATALOGUE_NUMBER = 'n:'
-- p:<product id> -> number
local CATALOGUE_PRODUCT = 'p:'

// A CommonJS consumer: require() of the ES module packages (Node >= 20.19 loads them
// synchronously; one copy of each module, so instanceof holds across both styles).
const codec = require("@wirestream/generated/rsocket/v1_0");
const machines = require("@wirestream/generated/rsocket/v1_0/machines");
const runtime = require("@wirestream/runtime");

import("./checks.mjs").then(({ checks }) => {
  console.log(JSON.stringify(checks(codec, machines, runtime)));
});

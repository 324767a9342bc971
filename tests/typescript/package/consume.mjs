import * as codec from "@wirestream/generated/rsocket/v1_0";
import * as machines from "@wirestream/generated/rsocket/v1_0/machines";
import * as runtime from "@wirestream/runtime";
import { checks } from "./checks.mjs";

console.log(JSON.stringify(checks(codec, machines, runtime)));

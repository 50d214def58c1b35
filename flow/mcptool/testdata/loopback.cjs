// Preloaded with `node --require` by rath's tests: makes every server the
// process starts listen on 127.0.0.1 only, since the reference MCP server
// listens on all interfaces and the tests use loopback addresses only.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || /^\d+$/.test(String(args[0]))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};

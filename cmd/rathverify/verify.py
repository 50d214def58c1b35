"""verify.py checks a rath run bundle with Python 3 and securesystemslib (Debian:
python3-securesystemslib), as rathverify (main.go beside it) does:

    python3 verify.py [--log-key LOG.vkey] [--witness WITNESS.vkey]... DIR

--log-key is the signer's note verifier key as its owner published it (default: the bundle's own
verifier.vkey, which proves only consistency); each --witness is a witness key you trust, of
which at least one must have cosigned the checkpoint. It prints FAIL and what is wrong (exit
status 1), or ok.
"""
import base64, hashlib, json, os, sys
from securesystemslib.signer import Signature, SSlibKey

failed = []
# A damaged file (bad base64, JSON or UTF-8) raises somewhere below; it must read as a failure.
# (Python exits with status 1 after the hook.)
def malformed(kind, err, tb): print("FAIL: a malformed file in the bundle (%s: %s)" % (kind.__name__, err))
sys.excepthook = malformed
def fail(msg): failed.append(msg); print("FAIL: " + msg)
def sha(b): return hashlib.sha256(b).digest()
def read(name): return open(name, "rb").read()

args, log_key, pins = sys.argv[1:], None, []
while args and args[0] in ("--log-key", "--witness") and len(args) > 1:
    if args[0] == "--log-key": log_key = os.path.abspath(args[1])
    else: pins.append(os.path.abspath(args[1]))
    args = args[2:]
if len(args) > 1 or args and args[0].startswith("-"):
    sys.exit("usage: python3 verify.py [--log-key LOG.vkey] [--witness WITNESS.vkey]... DIR")
os.chdir(args[0] if args else ".")

class Key:
    """A note verifier key: name+hash+base64(algorithm byte 1, Ed25519 key); the base64 may hold '+'."""
    def __init__(self, text, where):
        self.text = text.strip()
        parts = self.text.split("+", 2)
        raw = base64.b64decode(parts[2]) if len(parts) == 3 else b""
        if len(raw) != 33 or raw[0] != 1: sys.exit("FAIL: %s: not an Ed25519 note verifier key" % where)
        self.name, self.hash, pub = parts[0], bytes.fromhex(parts[1]), raw[1:]
        der = b"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00" + pub  # PKIX DER (RFC 8410)
        self.id = hashlib.sha256(der).hexdigest()
        self.ssl = SSlibKey(self.id, "ed25519", "ed25519", {"public": pub.hex()})
    def verified(self, sig, data):
        try: self.ssl.verify_signature(Signature(self.id, sig.hex()), data); return True
        except Exception: return False

# A symbolic link could make a name read outside the bundle; an exporter writes none.
for top, dirs, names in os.walk("."):
    for n in dirs + names:
        if os.path.islink(os.path.join(top, n)): fail(os.path.relpath(os.path.join(top, n)) + ": a symbolic link")
if failed: sys.exit("bundle: %d symbolic links FAILED" % len(failed))

key = Key(read(log_key or "verifier.vkey").decode(), log_key or "verifier.vkey")
print("log key %s (key %s): %s" % (key.name, key.id, "pinned" if log_key else
      "NOT pinned, the bundle's own verifier.vkey: compare it with the published key, or pass that with --log-key"))
try:
    env = json.loads(read("attestation.dsse.json"))
    body, ptype = base64.b64decode(env["payload"], validate=True), env["payloadType"].encode()
except (ValueError, KeyError, TypeError) as e:
    sys.exit("FAIL: attestation.dsse.json: not a DSSE envelope (%s)" % e)
pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(body), body)
if not any(s["keyid"] == key.id and key.verified(base64.b64decode(s["sig"]), pae) for s in env["signatures"]):
    sys.exit("FAIL: attestation.dsse.json: no valid signature by key " + key.id)
st = json.loads(body)
pred = st["predicate"]
for s in st["subject"]:
    if not os.path.isfile(s["name"]) or sha(read(s["name"])).hex() != s["digest"]["sha256"]:
        fail(s["name"] + ": missing, or its SHA-256 is not the attested one")
listed = {s["name"] for s in st["subject"]} | {"attestation.dsse.json"}
for top, _, names in os.walk("."):
    for n in names:
        if os.path.relpath(os.path.join(top, n)) not in listed:
            fail(os.path.relpath(os.path.join(top, n)) + ": not attested")
if failed:  # what follows reads the files as attested
    sys.exit("bundle of run %s: %d files FAILED" % (pred["run"], len(failed)))

# The checkpoint: a signed note. A signature line is "— NAME base64(4-byte key hash, signature)".
text, _, sigs = read("checkpoint").partition(b"\n\n")
def cosigned(k):
    for l in sigs.decode().splitlines():
        f = l.split(" ")
        if len(f) == 3 and f[0] == "\u2014" and f[1] == k.name:
            s = base64.b64decode(f[2])
            if s[:4] == k.hash and k.verified(s[4:], text + b"\n"): return True
    return False
if not cosigned(key): fail("checkpoint: no valid signature by the log key " + key.name)
witnesses = [Key(w, "witnesses.vkey") for w in read("witnesses.vkey").decode().split()] if os.path.exists("witnesses.vkey") else []
pinned = [Key(read(p).decode(), p) for p in pins]
pinned_ids, pinned_cosigned = {p.id for p in pinned}, 0
for w in witnesses:
    if not cosigned(w):
        fail("checkpoint: no valid cosignature by witness %s (key %s), which witnesses.vkey lists" % (w.name, w.id))
    elif w.id in pinned_ids:
        pinned_cosigned += 1; print("witness %s (key %s): cosigned, pinned" % (w.name, w.id))
    else:
        print("witness %s (key %s): cosigned, NOT pinned" % (w.name, w.id))
for p in pinned:
    if p.id in {w.id for w in witnesses}: continue
    if cosigned(p): pinned_cosigned += 1; print("witness %s (key %s): cosigned, pinned" % (p.name, p.id))
    else: print("witness %s (key %s): pinned, did not cosign" % (p.name, p.id))
if not pins:
    print("no witness pinned: the witnesses above are the bundle's own word; pass the keys you trust with --witness FILE")
elif pinned_cosigned == 0:
    fail("checkpoint: no pinned witness cosigned it")

# Each line's leaf against the checkpoint's root through its proof (RFC 9162, section 2.1.3.2),
# each payload and salt against its line's commitment, each blob against its name.
size, root = int(text.split(b"\n")[1]), base64.b64decode(text.split(b"\n")[2])
lines, proofs = read("events.jsonl").splitlines(), json.loads(read("proofs.json"))
if not len(lines) == len(proofs) == pred["events"]:
    fail("events.jsonl has %d lines, proofs.json %d proofs, the attestation says %d events" % (len(lines), len(proofs), pred["events"]))
named = b""
for line, proof in zip(lines, proofs):
    ev = json.loads(line)
    fn, sn, r = ev["seq"] - 1, size - 1, sha(b"\x00" + line)
    for p in map(base64.b64decode, proof["hashes"]):
        if sn == 0: r = None; break
        if fn & 1 or fn == sn:
            r = sha(b"\x01" + p + r)
            while not fn & 1 and fn: fn, sn = fn >> 1, sn >> 1
        else:
            r = sha(b"\x01" + r + p)
        fn, sn = fn >> 1, sn >> 1
    if proof["index"] != ev["seq"] - 1 or ev["seq"] > size or sn != 0 or r != root:
        fail("seq %d: its leaf is not in the checkpoint's tree" % ev["seq"])
    if ev["leaf"] == 1 and ev["seq"] not in pred.get("redacted", []):
        payload = read("payloads/%d.json" % ev["seq"]) if os.path.exists("payloads/%d.json" % ev["seq"]) else b""
        salt = read("payloads/%d.salt" % ev["seq"]) if os.path.exists("payloads/%d.salt" % ev["seq"]) else b""
        named += payload
        if sha(salt + payload).hex() != ev["payload"]:
            fail("seq %d: payloads/%d.json and .salt do not match the line's commitment" % (ev["seq"], ev["seq"]))
blobs = sorted(os.listdir("blobs")) if os.path.isdir("blobs") else []
named += b"".join(read("blobs/" + b) for b in blobs)
for b in blobs:
    if sha(read("blobs/" + b)).hex() != b:
        fail("blobs/%s: its SHA-256 is not its name" % b)
    elif b.encode() not in named:
        fail("blobs/%s: no payload names it" % b)
if failed:
    sys.exit("bundle of run %s: %d checks FAILED" % (pred["run"], len(failed)))
print("ok: run %s, %d events (seqs %d to %d) in the tree at size %d, signed by %s (key %s), %d pinned witnesses of %d cosigned"
      % (pred["run"], len(lines), pred["firstSeq"], pred["lastSeq"], size, key.name, key.id, pinned_cosigned, len(pins)))

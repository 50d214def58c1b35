#!/usr/bin/env bash
# verify.sh checks a rath run bundle with bash, coreutils and OpenSSL 3, as rathverify (main.go
# beside it) does, short of the inclusion proofs (verify.py and rathverify check those):
#
#   bash verify.sh [-l LOG.vkey] [-w WITNESS.vkey]... DIR
#
# -l is the signer's note verifier key as its owner published it (default: the bundle's own
# verifier.vkey, which proves only consistency); each -w is a witness key you trust, of which at
# least one must have cosigned the checkpoint. It prints FAIL and what is wrong (exit status 1),
# or ok.
set -euo pipefail
log='' pins=()
while getopts l:w: o; do
	case $o in
	l) log=$(realpath "$OPTARG") ;;
	w) pins+=("$(realpath "$OPTARG")") ;;
	*) echo "usage: bash verify.sh [-l LOG.vkey] [-w WITNESS.vkey]... DIR" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
cd "${1:-.}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A note verifier key is name+hash+base64(algorithm byte 1, Ed25519 key); the base64 may hold
# '+'. Its PKIX DER is a fixed prefix, then the key (RFC 8410); its key id the DER's SHA-256.
raw() { printf %s "$1" | cut -d+ -f3- | base64 -d 2>/dev/null; }
der() { printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'; raw "$1" | tail -c 32; }
keyid() { der "$1" | sha256sum | cut -c1-64; }
pem() { echo "-----BEGIN PUBLIC KEY-----"; der "$1" | base64; echo "-----END PUBLIC KEY-----"; }
vkey() { # the key in file $1, checked
	local k
	k=$(tr -d '\n' <"$1")
	[ "$(raw "$k" | head -c 1 | od -An -tx1 | tr -d ' ')" = 01 ] && [ "$(raw "$k" | wc -c)" = 33 ] ||
		{ echo "FAIL: $1: not an Ed25519 note verifier key" >&2; exit 1; }
	printf %s "$k"
}

# A symbolic link could make a name read outside the bundle; an exporter writes none.
links=$(find . -type l | sed 's|^\./||')
[ -z "$links" ] || fail "symbolic links in the bundle: $links"

if [ -n "$log" ]; then
	key=$(vkey "$log")
	echo "log key ${key%%+*} (key $(keyid "$key")): pinned"
else
	key=$(vkey verifier.vkey)
	echo "log key ${key%%+*} (key $(keyid "$key")): NOT pinned, the bundle's own verifier.vkey: compare it with the published key, or pass that with -l"
fi
pem "$key" >"$T/log.pem"

# The attestation: Ed25519 over the DSSE pre-authentication encoding of the statement.
# A damaged envelope must print FAIL, not end the script on set -e.
grep -o '"payload":"[^"]*"' attestation.dsse.json | cut -d'"' -f4 | base64 -d >"$T/statement.json" 2>/dev/null ||
	fail "attestation.dsse.json: no base64 payload"
grep -o '"sig":"[^"]*"' attestation.dsse.json | head -n 1 | cut -d'"' -f4 | base64 -d >"$T/attestation.sig" 2>/dev/null ||
	fail "attestation.dsse.json: no base64 signature"
{ printf 'DSSEv1 %d %s %d ' 28 'application/vnd.in-toto+json' "$(wc -c <"$T/statement.json")"; cat "$T/statement.json"; } >"$T/pae"
openssl pkeyutl -verify -pubin -inkey "$T/log.pem" -rawin -in "$T/pae" -sigfile "$T/attestation.sig" >/dev/null ||
	fail "attestation.dsse.json: no valid signature by the log key"

# Every file against the statement's subjects, and no file left out.
grep -o '{"name":"[^"]*","digest":{"sha256":"[0-9a-f]*"}}' "$T/statement.json" |
	sed -E 's/^\{"name":"([^"]*)","digest":\{"sha256":"([0-9a-f]*)"\}\}$/\2  \1/' >"$T/SHA256SUMS"
sha256sum --quiet --strict -c "$T/SHA256SUMS" || fail "the files above do not match the attestation"
find . ! -type d ! -path ./attestation.dsse.json | sed 's|^\./||' | LC_ALL=C sort >"$T/files"
cut -c 67- "$T/SHA256SUMS" | LC_ALL=C sort | diff - "$T/files" || fail "files not attested (>) or missing (<)"

# The checkpoint: a signed note. A signature line is "— NAME base64(4-byte key hash, signature)".
sed -n '1,/^$/p' checkpoint | sed '$d' >"$T/checkpoint.txt"
cosigned() { # a line of the checkpoint is a valid signature by key $1
	local name=${1%%+*} hash s
	hash=$(printf %s "$1" | cut -d+ -f2)
	pem "$1" >"$T/k.pem"
	for s in $(awk -v n="$name" '$1 == "—" && $2 == n { print $3 }' checkpoint); do
		printf %s "$s" | base64 -d >"$T/sig" 2>/dev/null || continue
		[ "$(head -c 4 "$T/sig" | od -An -tx1 | tr -d ' \n')" = "$hash" ] || continue
		tail -c 64 "$T/sig" >"$T/sig64"
		openssl pkeyutl -verify -pubin -inkey "$T/k.pem" -rawin -in "$T/checkpoint.txt" -sigfile "$T/sig64" >/dev/null 2>&1 && return 0
	done
	return 1
}
cosigned "$key" || fail "checkpoint: no valid signature by the log key ${key%%+*}"
# Every witness the bundle lists must have cosigned; with pins, at least one pinned witness.
pinned='' pinned_cosigned=0
for p in ${pins[@]+"${pins[@]}"}; do pinned+=" $(keyid "$(vkey "$p")")"; done
listed=$(cat witnesses.vkey 2>/dev/null || true)
for w in $listed; do
	id=$(keyid "$w")
	cosigned "$w" || fail "checkpoint: no valid cosignature by witness ${w%%+*} (key $id), which witnesses.vkey lists"
	case " $pinned " in
	*" $id "*) pinned_cosigned=$((pinned_cosigned + 1)); echo "witness ${w%%+*} (key $id): cosigned, pinned" ;;
	*) echo "witness ${w%%+*} (key $id): cosigned, NOT pinned" ;;
	esac
done
for p in ${pins[@]+"${pins[@]}"}; do
	w=$(vkey "$p") id=$(keyid "$(vkey "$p")")
	case " $(for l in $listed; do keyid "$l"; done | tr '\n' ' ') " in *" $id "*) continue ;; esac
	if cosigned "$w"; then
		pinned_cosigned=$((pinned_cosigned + 1))
		echo "witness ${w%%+*} (key $id): cosigned, pinned"
	else
		echo "witness ${w%%+*} (key $id): pinned, did not cosign"
	fi
done
if [ ${#pins[@]} -eq 0 ]; then
	echo "no witness pinned: the witnesses above are the bundle's own word; pass the keys you trust with -w FILE"
elif [ "$pinned_cosigned" -eq 0 ]; then
	fail "checkpoint: no pinned witness cosigned it"
fi
echo "ok: the attestation, every file and the checkpoint's signatures; $pinned_cosigned pinned witnesses of ${#pins[@]} cosigned"

#!/bin/sh
# Makes the TLS material the tests use, in DIR (nothing of it is committed): a CA and a fedcld
# certificate it signed for 127.0.0.1 and localhost; a certificate of the same CA for another name;
# a second CA that signed nothing of fedcld's; and a random cluster key. Idempotent per DIR.
#   make_certificates.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
[ -f done ] && exit 0
quiet() { "$@" >/dev/null 2>&1 || { echo "make_certificates.sh: failed: $*" >&2; exit 1; }; }
ca() {  # ca NAME: a self-signed CA in NAME.pem, NAME.key
  quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 \
    -subj "/CN=fedcl test $1" -keyout "$1.key" -out "$1.pem"
}
leaf() {  # leaf NAME SAN: a certificate for SAN signed by ca, in NAME.pem, NAME.key
  printf 'subjectAltName=%s\n' "$2" > "$1.ext"
  quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=fedcl test $1" \
    -keyout "$1.key" -out "$1.csr"
  quiet openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 \
    -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
ca ca
ca other-ca
leaf daemon "IP:127.0.0.1,DNS:localhost"
leaf elsewhere "DNS:elsewhere.invalid"
head -c 24 /dev/urandom | base64 > key
chmod 600 ./*.key key
touch done

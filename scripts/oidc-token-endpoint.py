#!/usr/bin/env python3
"""A small OAuth token endpoint for librdkafka's test 0126 (SASL/OAUTHBEARER OIDC).

It plays the part trivup's OauthbearerOIDCApp plays in librdkafka's own CI: an HTTP
server on 127.0.0.1 that hands out RS256-signed JWTs, and the public key as a JWKS file
for the broker (sasl.oauthbearer.jwks.endpoint.url=file:...). Standard library only; the
RSA keys are made, and the tokens signed, with the `openssl` command.

Paths (the port is --port, or a free one, printed and written to --port-file):

  POST /retrieve            client credentials (grant_type=client_credentials[&scope=S],
                            an `Authorization: Basic` header, `Accept: application/json`)
                            or a JWT bearer grant (grant_type=urn:ietf:params:oauth:
                            grant-type:jwt-bearer&assertion=JWT[&scope=S], the assertion
                            signed with --client-key-dir's key): a valid token
  GET  /retrieve?...        Azure IMDS style (`Metadata: true`, api-version, resource and
                            client_id in the query): a valid token; without one of them 400
  POST /retrieve/long       the same, a token that lasts --long-lifetime seconds (0142: its
                            sessions then end at connections.max.reauth.ms, not with the token)
  POST /retrieve/badformat  a token with a broken signature (the client takes it, the
                            broker must refuse it)
  POST /retrieve/expire     a token that expired an hour ago (the client refuses it)
  GET  /keys                the JWKS, as in the --jwks-file

A scope, where one is given, must be one of VALID_SCOPES (else 400 invalid_scope).
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VALID_SCOPES = ("test", "test-scope", "api://1234-abcd/.default")
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
AZURE_IMDS_PARAMS = ("api-version", "resource", "client_id")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def openssl(*args, stdin=None):
    return subprocess.run(
        ("openssl",) + args, input=stdin, check=True, capture_output=True
    ).stdout


def new_rsa_key(path):
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
            "-pkeyopt", "rsa_keygen_pubexp:65537", "-out", path)
    os.chmod(path, 0o600)


class Signer:
    """An RSA key that signs RS256 JWTs, and its JWKS entry."""

    def __init__(self, key_path, kid):
        self.key_path = key_path
        self.kid = kid
        modulus = openssl("rsa", "-in", key_path, "-noout", "-modulus").decode()
        n = int(modulus.strip().split("=", 1)[1], 16)
        self.jwk = {
            "kty": "RSA",
            "kid": kid,
            "alg": "RS256",
            "use": "sig",
            "n": b64url(n.to_bytes((n.bit_length() + 7) // 8, "big")),
            "e": b64url((65537).to_bytes(3, "big")),
        }
        self.lock = threading.Lock()

    def sign(self, claims):
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode())
                         + "." + b64url(json.dumps(claims, separators=(",", ":")).encode()))
        with self.lock:
            signature = openssl("dgst", "-sha256", "-sign", self.key_path,
                                stdin=signing_input.encode())
        return signing_input + "." + b64url(signature)


def verify_rs256(jwt, public_key_path):
    """True iff JWT is an RS256 JWS whose signature the public key verifies."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(b64url_decode(parts[0]))
        signature = b64url_decode(parts[2])
    except (ValueError, json.JSONDecodeError):
        return False
    # The canonical encoding only: openssl ignores bytes past the key's size.
    if header.get("alg") != "RS256" or b64url(signature) != parts[2]:
        return False
    with tempfile.NamedTemporaryFile() as sig:
        sig.write(signature)
        sig.flush()
        result = subprocess.run(
            ["openssl", "dgst", "-sha256", "-verify", public_key_path, "-signature", sig.name],
            input=(parts[0] + "." + parts[1]).encode(), capture_output=True)
    return result.returncode == 0


class Handler(BaseHTTPRequestHandler):
    server_version = "seglog-oidc-token-endpoint"
    # Set by main().
    signer = None
    args = None
    client_public_key = None

    def log_message(self, fmt, *a):
        sys.stderr.write("[oidc] %s %s\n" % (self.address_string(), fmt % a))

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, error, description):
        self.log_message("refused: %s: %s", error, description)
        self.reply(status, {"error": error, "error_description": description})

    def token(self, lifetime_s, broken=False):
        now = int(time.time())
        a = self.args
        claims = {"sub": a.subject, "iss": a.issuer, "aud": a.audience,
                  "iat": now, "exp": now + lifetime_s, "scope": a.scope}
        if lifetime_s < 0:
            claims["iat"] = now + 2 * lifetime_s
        jwt = self.signer.sign(claims)
        if broken:
            jwt += "invalid"
        self.reply(200, {"access_token": jwt, "token_type": "bearer",
                         "expires_in": lifetime_s})

    def valid_scope(self, form):
        scope = form.get("scope")
        if scope is None:
            return True
        if scope[0] in VALID_SCOPES:
            return True
        self.error(400, "invalid_scope", "scope %r is not one of %s" % (scope[0], VALID_SCOPES))
        return False

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/keys":
            self.reply(200, {"keys": [self.signer.jwk]})
            return
        if url.path != "/retrieve":
            self.error(404, "not_found", "no such path: %s" % url.path)
            return
        # Azure IMDS (librdkafka's sasl.oauthbearer.metadata.authentication.type=azure_imds).
        query = urllib.parse.parse_qs(url.query)
        if self.headers.get("Metadata", "").lower() != "true":
            self.error(400, "invalid_request", "the Metadata: true header is required")
            return
        missing = [p for p in AZURE_IMDS_PARAMS if not query.get(p)]
        if missing:
            self.error(400, "invalid_request", "missing query parameter(s): %s" % ", ".join(missing))
            return
        self.token(self.args.lifetime)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        path = urllib.parse.urlsplit(self.path).path
        if path == "/retrieve/badformat":
            self.token(30, broken=True)
        elif path == "/retrieve/expire":
            self.token(-3600)
        elif path == "/retrieve":
            self.retrieve(body, self.args.lifetime)
        elif path == "/retrieve/long":
            self.retrieve(body, self.args.long_lifetime)
        else:
            self.error(404, "not_found", "no such path: %s" % path)

    def retrieve(self, body, lifetime_s):
        if self.headers.get("Accept") != "application/json":
            self.error(400, "invalid_request", "Accept: application/json is required")
            return
        if not (self.headers.get("Content-Type") or "").startswith(
                "application/x-www-form-urlencoded"):
            self.error(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
            return
        form = urllib.parse.parse_qs(body, keep_blank_values=True)
        grant = form.get("grant_type", [""])[0]
        if grant == "client_credentials":
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Basic "):
                self.error(401, "invalid_client", "an Authorization: Basic header is required")
                return
            try:
                credentials = base64.b64decode(auth[6:]).decode()
            except ValueError:
                credentials = ""
            expected = "%s:%s" % (self.args.client_id, self.args.client_secret)
            if credentials != expected:
                self.error(401, "invalid_client", "wrong client id or secret")
                return
        elif grant == JWT_BEARER_GRANT:
            if self.client_public_key is None:
                self.error(400, "unsupported_grant_type", "started without --client-key-dir")
                return
            assertion = form.get("assertion", [""])[0]
            if not verify_rs256(assertion, self.client_public_key):
                self.error(400, "invalid_grant", "the assertion's RS256 signature does not verify")
                return
        else:
            self.error(400, "unsupported_grant_type", "grant_type %r" % grant)
            return
        if self.valid_scope(form):
            self.token(lifetime_s)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--port-file", help="write the port here once listening")
    p.add_argument("--jwks-file", required=True, help="write the JWKS (public key) here")
    p.add_argument("--key-dir", help="where the signing key goes (default: a temporary dir)")
    p.add_argument("--client-key-dir",
                   help="make a client key pair here for JWT bearer grants: client.key.pem, "
                        "client.key.enc.pem (encrypted with --client-key-password), "
                        "client.pub.pem")
    p.add_argument("--client-key-password", default="seglog-oidc-client-key-pass")
    p.add_argument("--issuer", default="seglog-oidc-issuer")
    p.add_argument("--audience", default="seglog")
    p.add_argument("--subject", default="seglog-oidc")
    p.add_argument("--scope", default="test")
    p.add_argument("--kid", default="seglog-oidc-key-1")
    p.add_argument("--client-id", default="123")
    p.add_argument("--client-secret", default="abc")
    p.add_argument("--lifetime", type=int, default=4,
                   help="seconds a valid token lasts (4, as trivup's: the client refreshes "
                        "and re-authenticates while 0126 runs)")
    p.add_argument("--long-lifetime", type=int, default=3600,
                   help="seconds a token from /retrieve/long lasts (3600)")
    args = p.parse_args()

    key_dir = args.key_dir or tempfile.mkdtemp(prefix="seglog-oidc-")
    os.makedirs(key_dir, exist_ok=True)
    key_path = os.path.join(key_dir, "signing.key.pem")
    new_rsa_key(key_path)
    signer = Signer(key_path, args.kid)

    client_public_key = None
    if args.client_key_dir:
        d = args.client_key_dir
        os.makedirs(d, exist_ok=True)
        plain = os.path.join(d, "client.key.pem")
        new_rsa_key(plain)
        openssl("pkcs8", "-topk8", "-in", plain, "-v2", "aes-256-cbc",
                "-passout", "pass:" + args.client_key_password,
                "-out", os.path.join(d, "client.key.enc.pem"))
        client_public_key = os.path.join(d, "client.pub.pem")
        openssl("pkey", "-in", plain, "-pubout", "-out", client_public_key)

    tmp = args.jwks_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"keys": [signer.jwk]}, f, indent=2)
    os.replace(tmp, args.jwks_file)

    Handler.signer = signer
    Handler.args = args
    Handler.client_public_key = client_public_key
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print("listening on 127.0.0.1:%d" % port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

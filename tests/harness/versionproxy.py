"""A reverse proxy in front of one harness kube-apiserver that reports another version on /version.

Why: the MultiKueue dependency matrix compares a worker's Kubernetes minor with the manager's.
Building a second kube-apiserver at another minor would double the cold build; every other
answer of the worker would still be the real 1.35 server, so only /version is rewritten
(gitVersion, major, minor). Everything else is forwarded byte for byte, watches streamed.

Identity is kept, not widened: a bearer token is forwarded as it came; a client certificate is
verified against the worker's CA here and passed on through the apiserver's request-header
(front-proxy) authentication, exactly as the aggregator does, using the plane's
front-proxy-client certificate. X-Remote-* headers from the client are dropped. A request with
neither is forwarded anonymous. Not supported: connection upgrades (exec, attach, port-forward).

Run as a harness child process: `python -m tests.harness.versionproxy --help`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "host", "content-length"}
VERSION_PATH = "/version"


def rewritten_version(body: bytes, git_version: str) -> bytes:
    """The apiserver's /version document with gitVersion, major and minor taken from `git_version`."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+.*", git_version)
    if not match:
        raise ValueError(f"git version {git_version!r} is not of the form vMAJOR.MINOR.PATCH")
    info = json.loads(body)
    info.update(gitVersion=git_version, major=match.group(1), minor=match.group(2))
    return json.dumps(info, indent=2).encode()


class VersionProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, upstream: str, *, ca: str, serving_cert: str, serving_key: str,
                 front_proxy_cert: str, front_proxy_key: str, git_version: str):
        super().__init__(("127.0.0.1", port), _Handler)
        parsed = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parsed.hostname, parsed.port or 443
        self.git_version = git_version
        self.serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.serving.load_cert_chain(serving_cert, serving_key)
        self.serving.load_verify_locations(ca)
        self.serving.verify_mode = ssl.CERT_OPTIONAL  # token clients present no certificate
        self.anonymous_upstream = ssl.create_default_context(cafile=ca)
        self.front_proxy_upstream = ssl.create_default_context(cafile=ca)
        self.front_proxy_upstream.load_cert_chain(front_proxy_cert, front_proxy_key)

    def finish_request(self, request, client_address):
        # The TLS handshake runs here, in the request's own thread, so a slow client blocks no one.
        try:
            tls = self.serving.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            tls.close()


def _identity(cert: dict) -> tuple[str, list[str]]:
    user, groups = "", []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return user, groups


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: VersionProxy

    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass  # one line per request would grow the log without bound during watches

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _forward(self) -> None:
        body = self._read_body()
        is_version = urlsplit(self.path).path.rstrip("/") == VERSION_PATH
        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in HOP_BY_HOP and not k.lower().startswith("x-remote-")
                   and not (is_version and k.lower() == "accept-encoding")]
        cert = self.connection.getpeercert()
        if cert:
            user, groups = _identity(cert)
            headers.append(("X-Remote-User", user))
            headers += [("X-Remote-Group", group) for group in groups]
            context = self.server.front_proxy_upstream
        else:
            context = self.server.anonymous_upstream
        upstream = http.client.HTTPSConnection(self.server.upstream_host, self.server.upstream_port,
                                               context=context)
        try:
            upstream.putrequest(self.command, self.path, skip_accept_encoding=True)
            for key, value in headers:
                upstream.putheader(key, value)
            if body is not None:
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body)
            response = upstream.getresponse()
        except OSError as err:
            upstream.close()
            self.send_error(502, f"upstream kube-apiserver unreachable: {err}")
            return
        try:
            self._relay(response, is_version)
        except (TimeoutError, BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        finally:
            upstream.close()

    def _relay(self, response: http.client.HTTPResponse, is_version: bool) -> None:
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if is_version and response.status == 200:
            data = rewritten_version(response.read(), self.server.git_version)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if self.command == "HEAD" or response.status in (204, 304):
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # Chunked in both directions, flushed per read: watch events arrive as the apiserver sends them.
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while True:
            data = response.read1(65536)
            if not data:
                break
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _forward


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="listen on 127.0.0.1:PORT")
    parser.add_argument("--upstream", required=True, help="https URL of the kube-apiserver")
    parser.add_argument("--git-version", required=True, help="what /version reports, e.g. v1.34.4")
    for name in ("ca", "serving-cert", "serving-key", "front-proxy-cert", "front-proxy-key"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    server = VersionProxy(args.port, args.upstream, ca=args.ca, serving_cert=args.serving_cert,
                          serving_key=args.serving_key, front_proxy_cert=args.front_proxy_cert,
                          front_proxy_key=args.front_proxy_key, git_version=args.git_version)
    print(f"version proxy 127.0.0.1:{args.port} -> {args.upstream}, /version reports {args.git_version}",
          flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An exec credential plugin a test controls, as kubelogin or a cloud CLI would be: each run prints
the token held in a file next to it, with an ``expirationTimestamp`` some seconds ahead, and counts
its runs.  Swapping the file is a new login; a token the server no longer accepts is a revoked one.
The files are 0600 in the test's own directory; nothing prints the token."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import yaml

PLUGIN = textwrap.dedent('''\
    import datetime, json, pathlib
    here = pathlib.Path(__file__).parent
    with open(here / "runs", "a") as runs:
        runs.write("run\\n")
    lifetime = int((here / "lifetime").read_text())
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": {"token": (here / "token").read_text().strip(),
                                 "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
''')


class ExecCredentialPlugin:
    """The plugin's directory: ``use(token)`` changes what the next run prints; ``runs`` counts runs."""

    def __init__(self, directory: Path, token: str, lifetime_s: int = 60):
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        self.directory = directory
        self.script = directory / "plugin.py"
        self.script.write_text(PLUGIN)
        (directory / "lifetime").write_text(str(lifetime_s))
        self.use(token)

    def use(self, token: str) -> None:
        path = self.directory / "token"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token)

    @property
    def runs(self) -> int:
        path = self.directory / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def user(self) -> dict:
        """The kubeconfig ``user`` entry that runs this plugin."""
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                         "args": [str(self.script)], "interactiveMode": "Never"}}

    def kubeconfig(self, path: Path, server: str, ca_file: str | None = None) -> str:
        cluster: dict = {"server": server}
        if ca_file:
            cluster["certificate-authority"] = ca_file
        else:
            cluster["insecure-skip-tls-verify"] = True
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "plugin",
            "clusters": [{"name": "plugin", "cluster": cluster}],
            "users": [{"name": "plugin", "user": self.user()}],
            "contexts": [{"name": "plugin", "context": {"cluster": "plugin", "user": "plugin"}}],
        }))
        return str(path)

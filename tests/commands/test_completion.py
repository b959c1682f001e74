"""`tau-tui completion bash|zsh|fish` and the hidden `tau-tui __complete KIND`.

bash is exercised in full: the generated script is sourced in a real bash (a subprocess), the
function `complete -p` registers for tau-tui is called as bash calls it on tab (COMP_WORDS,
COMP_CWORD), and COMPREPLY is read back. zsh is loaded into a real zsh with compinit (the
registration and every per-command function are checked; scripts/test.sh installs zsh); fish,
whose Debian package pulls man-db and groff, is parsed and asked (`complete -C`) where it is
installed, and otherwise gets only the checks below that need no fish (the test says it skipped).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tau_tui.cli import main
from tau_tui.commands.completion_model import command_tree
from tau_tui.commands.completion_names import Scope, names_of, scope_of
from tau_tui.commands.parser import COMMANDS, MULTIKUEUE_ACTIONS

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts:
- {name: lab-east, context: {cluster: c, user: u, namespace: team-a}}
- {name: lab-west, context: {cluster: c, user: u}}
current-context: lab-east
"""


def generated(shell: str, capsys) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "tau-tui.bash"
    result = subprocess.run([sys.executable, "-m", "tau_tui.cli", "completion", "bash"], capture_output=True, text=True,
                            timeout=120, check=True)
    path.write_text(result.stdout)
    return path


def tab(script: Path, *words: str, env: dict[str, str] | None = None, program: str = "tau-tui") -> list[str]:
    """What bash offers for ``program words...`` with the cursor on the last word (tab pressed there)."""
    probe = f"""
source {script}
spec=$(complete -p {program}) || exit 3
function=$(sed -E 's/.*-F ([^ ]+).*/\\1/' <<<"$spec")
COMP_WORDS=({program} "$@")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
COMP_LINE="${{COMP_WORDS[*]}}"
"$function" {program} "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    bin_dir = str(Path(sys.executable).parent)  # the tau-tui the script calls for names
    full_env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), **(env or {}))
    result = subprocess.run(["bash", "-c", probe, "probe", *words], capture_output=True, text=True, timeout=120,
                            env=full_env, cwd=script.parent)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


def test_bash_offers_every_command_and_the_apps_flags(bash_script):
    assert sorted(tab(bash_script, "")) == sorted(COMMANDS)
    flags = tab(bash_script, "--")
    for flag in ("--demo", "--readonly", "--version", "--context", "--namespace", "--all-namespaces", "--theme", "--pane"):
        assert flag in flags, flags
    assert tab(bash_script, "st") == ["status"]


def test_bash_follows_nested_commands_and_their_flags(bash_script):
    assert tab(bash_script, "runs", "") == ["retry", "resume"]
    assert tab(bash_script, "audit", "") == ["verify", "key", "rotate-key", "start-over"]
    assert tab(bash_script, "multikueue", "") == list(MULTIKUEUE_ACTIONS)
    retry = tab(bash_script, "runs", "retry", "--")
    assert {"--dry-run", "--yes", "--wait", "--namespace", "--output", "--context"} <= set(retry), retry
    assert "--force" not in retry  # resume's, not retry's
    assert "--force" in tab(bash_script, "runs", "resume", "--")
    # option values before the cursor are skipped, so the path is still found
    assert tab(bash_script, "runs", "-n", "team-a", "-o", "json", "re") == ["retry", "resume"]


def test_bash_completes_choices_of_flags(bash_script):
    assert tab(bash_script, "status", "-o", "") == ["table", "json", "yaml"]
    assert tab(bash_script, "multikueue", "status", "--flow", "") == ["setup", "drain", "rotate"]
    assert tab(bash_script, "submit", "f.yaml", "--dry-run", "") == ["server", "none"]
    assert tab(bash_script, "--theme", "") == ["tau-dark", "tau-high-contrast", "tau-light"]
    assert "nodes" in tab(bash_script, "--pane", "")
    assert tab(bash_script, "--demo", "") == ["demo", "faults", "large", "xl"]
    assert tab(bash_script, "completion", "") == ["bash", "zsh", "fish"]
    # --flag=value, which bash splits at '='
    assert tab(bash_script, "status", "--output", "=", "y") == ["yaml"]


def test_bash_completes_files_where_a_file_goes(bash_script):
    (bash_script.parent / "tau.yaml").write_text("name: x\n")
    assert "tau.yaml" in tab(bash_script, "validate", "ta")
    assert "tau.yaml" in tab(bash_script, "multikueue", "setup", "--plan", "ta")


def test_bash_completes_contexts_from_the_kubeconfig(bash_script, tmp_path):
    config = tmp_path / "config"
    config.write_text(KUBECONFIG % 1)
    env = {"KUBECONFIG": str(config)}
    assert tab(bash_script, "status", "run-1", "--context", "", env=env) == ["lab-east", "lab-west"]
    assert tab(bash_script, "--context", "lab-w", env=env) == ["lab-west"]


def test_the_kubectl_plugin_name_completes_the_same(bash_script):
    assert sorted(tab(bash_script, "", program="kubectl-tau_tui")) == sorted(COMMANDS)


def test_every_command_path_of_the_parser_is_in_each_script(capsys):
    scripts = {shell: generated(shell, capsys) for shell in ("bash", "zsh", "fish")}
    for command in command_tree():
        for name in command.subcommands:
            for shell, text in scripts.items():
                assert name in text, (shell, command.name, name)
        for option in command.options:
            for flag in option.flags:
                assert flag.lstrip("-") in scripts["fish"], flag
                assert flag in scripts["bash"] and flag in scripts["zsh"], flag
    assert "__complete" not in " ".join(c.name for c in command_tree())  # the helper stays hidden


def test_zsh_loads_it_and_registers_both_names(tmp_path, capsys):
    zsh = shutil.which("zsh")
    assert zsh, "zsh is not installed (apt-get install zsh); scripts/test.sh installs it"
    script = tmp_path / "_tau-tui"
    script.write_text(generated("zsh", capsys))
    assert subprocess.run([zsh, "-n", str(script)], capture_output=True, text=True, timeout=60).returncode == 0
    functions = sorted({line.split("(")[0] for line in script.read_text().splitlines()
                        if line.startswith("_tau_tui") and line.endswith("() {")})
    check = (f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump && source {script} && "
             "print -r -- $_comps[tau-tui] $_comps[kubectl-tau_tui] && "
             f"for f in {' '.join(functions)}; do whence -w $f; done")
    result = subprocess.run([zsh, "-f", "-c", check], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "_tau_tui_main _tau_tui_main", result.stdout
    assert len(lines) == 1 + len(functions) and all(line.endswith(": function") for line in lines[1:]), result.stdout
    assert "_tau_tui__runs__retry" in functions


def test_fish_script_parses_and_completes_where_fish_is_installed(tmp_path, capsys):
    text = generated("fish", capsys)
    assert "complete -c kubectl-tau_tui -w tau-tui" in text
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed: its script is checked only by the shell-independent tests")
    script = tmp_path / "tau-tui.fish"
    script.write_text(text)
    result = subprocess.run([fish, "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

    def offered(line: str) -> list[str]:
        done = subprocess.run([fish, "-N", "-c", f"source {script}; complete -C '{line}'"], capture_output=True,
                              text=True, timeout=60, env=dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}"))
        assert done.returncode == 0, done.stderr
        return sorted(row.split("\t")[0] for row in done.stdout.splitlines())

    assert offered("tau-tui ") == sorted(COMMANDS)
    assert offered("tau-tui runs ") == ["resume", "retry"]
    assert offered("tau-tui status -o ") == ["json", "table", "yaml"]
    assert offered("kubectl-tau_tui ru") == ["runs"]


# -- tau-tui __complete ------------------------------------------------------------------------


def test_names_of_the_simulated_cluster():
    scope = scope_of(["status", "--demo", "-n", "team-nlp"])
    assert scope == Scope(namespace="team-nlp", demo="demo")
    assert {"team-nlp", "team-vision", "kube-system"} <= set(names_of("namespaces", scope))
    runs = names_of("runs", Scope(demo="demo"))
    assert "llama-70b-sft" in runs and len(runs) == len(set(runs))
    assert scope_of(["--demo", "faults", "--context=x", "-nteam"]) == Scope(context="x", namespace="team", demo="faults")


def test_contexts_through_the_command(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    config.write_text(KUBECONFIG % 1)
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert main(["__complete", "contexts", "--", "status"]) == 0
    assert capsys.readouterr().out.split() == ["lab-east", "lab-west"]


def test_unknown_kinds_and_missing_kubeconfigs_print_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for argv in (["__complete"], ["__complete", "profiles"], ["__complete", "contexts"], ["__complete", "runs", "--"]):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert out == "" and err == "", (argv, out, err)


def test_a_server_that_never_answers_gets_nothing_and_the_helper_ends(tmp_path):
    """A server that accepts and then says nothing, holding every connection until the test ends: the
    helper can only return because its bound cut the wait."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    config = tmp_path / "config"
    config.write_text(KUBECONFIG % listener.getsockname()[1])
    try:
        result = subprocess.run([sys.executable, "-m", "tau_tui.cli", "__complete", "runs", "--", "status"],
                                capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, KUBECONFIG=str(config)))
        assert held, "the helper never connected: the test proves nothing"
    finally:
        done.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result

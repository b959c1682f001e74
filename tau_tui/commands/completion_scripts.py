"""``tau-tui completion bash|zsh|fish``: completion scripts written from the parsers' model
(:mod:`tau_tui.commands.completion_model`), for ``tau-tui`` and its kubectl plugin name.

Sub-commands, flags and fixed choices are in the script; names from the cluster (runs,
namespaces, contexts) are asked of ``tau-tui __complete KIND -- WORDS...`` when the user presses
tab, which prints nothing when it cannot answer within its short bound.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from .completion_model import Command, Option, Value, command_tree

PROGRAMS = ("tau-tui", "kubectl-tau_tui")
SHELLS = ("bash", "zsh", "fish")
HEADER = "{comment} {shell} completion for tau-tui (and kubectl-tau_tui), generated from its parser by `tau-tui completion {shell}`."


def cmd_completion(args) -> int:
    """`tau-tui completion SHELL`: the script on stdout."""
    sys.stdout.write(script(args.shell))
    return 0


def script(shell: str) -> str:
    commands = command_tree()
    writer: dict[str, Callable[[list[Command]], list[str]]] = {"bash": _bash, "zsh": _zsh, "fish": _fish}
    return "\n".join(writer[shell](commands)) + "\n"


# -- bash ------------------------------------------------------------------------------------


def _bash_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _bash_value(value: Value) -> str:
    """The bash lines that fill COMPREPLY for ``value`` (``$cur`` is the word being completed)."""
    if value.choices:
        return f'COMPREPLY=($(compgen -W {_bash_quote(" ".join(value.choices))} -- "$cur"))'
    if value.kind == "file":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))'
    if value.kind == "dir":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur"))'
    if value.kind:
        return f'_tau_tui_names {value.kind} "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"'
    return "COMPREPLY=()"


def _case(arms: Iterable[tuple[str, str]], default: str = "return 1") -> list[str]:
    lines = ['    case "$1|$2" in']
    lines += [f"        {pattern}) {body} ;;" for pattern, body in arms]
    return lines + [f"        *) {default} ;;", "    esac"]


def _bash(commands: list[Command]) -> list[str]:
    subs = [f'"{c.name}|{name}"' for c in commands for name in c.subcommands]
    valued, optional, values, options, positionals = [], [], [], [], []
    for c in commands:
        for option in c.options:
            if option.value is None:
                continue
            flags = "|".join(f'"{c.name}|{flag}"' for flag in option.flags)
            if option.optional_value:  # its value is the next word only when that is one of its choices
                choices = " ".join(option.value.choices)
                optional.append((flags, f'[[ " {choices} " == *" $3 "* ]]; return'))
            else:
                valued.append(flags)
            values.append((flags, _bash_value(option.value)))
        options.append((f'"{c.name}|"', f"echo {_bash_quote(' '.join(f for o in c.options for f in o.flags))}"))
        if c.subcommands:
            positionals.append((f'"{c.name}|0"', f'COMPREPLY=($(compgen -W {_bash_quote(" ".join(c.subcommands))} -- "$cur"))'))
        for index, positional in enumerate(c.positionals):
            positionals.append((f'"{c.name}|{index}"', _bash_value(positional.value)))
    lines = [HEADER.format(comment="#", shell="bash"),
             "# Install: tau-tui completion bash > ~/.local/share/bash-completion/completions/tau-tui",
             "#      or: source <(tau-tui completion bash)    (in ~/.bashrc)",
             "",
             "_tau_tui_names() {  # KIND WORDS...: names from the kubeconfig or the cluster; nothing when it cannot tell",
             "    local IFS=$'\\n' kind=$1",
             "    shift",
             '    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete "$kind" -- "$@" 2>/dev/null)" -- "$cur"))',
             "}",
             "_tau_tui_is_command() {  # PATH WORD",
             *_case([("|".join(subs), "return 0")]),
             "}",
             "_tau_tui_takes_value() {  # PATH FLAG NEXT-WORD",
             *_case([("|".join(valued), "return 0"), *optional]),
             "}",
             "_tau_tui_value() {  # PATH FLAG: complete the flag's value",
             *_case((pattern, body + "; return 0") for pattern, body in values),
             "}",
             "_tau_tui_options() {  # PATH",
             '    case "$1|" in',
             *[f"        {pattern}) {body} ;;" for pattern, body in options],
             "    esac",
             "}",
             "_tau_tui_positional() {  # PATH INDEX",
             *_case(positionals, default="COMPREPLY=()"),
             "}",
             "_tau_tui() {",
             '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}',
             "    # --flag=value: bash splits it at '='",
             '    if [[ $cur == "=" ]]; then cur=""; elif [[ $prev == "=" ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi',
             '    local path="" npos=0 i word skip=0',
             "    for ((i = 1; i < COMP_CWORD; i++)); do",
             "        word=${COMP_WORDS[i]}",
             "        if ((skip)); then skip=0; continue; fi",
             '        if [[ $word == "=" ]]; then skip=1; continue; fi',
             "        if [[ $word == -* ]]; then",
             '            [[ ${COMP_WORDS[i+1]} != "=" ]] && _tau_tui_takes_value "$path" "$word" "${COMP_WORDS[i+1]}" && skip=1',
             "            continue",
             "        fi",
             '        if ((npos == 0)) && _tau_tui_is_command "$path" "$word"; then',
             '            path=${path:+$path }$word',
             "        else",
             "            npos=$((npos + 1))",
             "        fi",
             "    done",
             '    if [[ $prev == -* && $cur != -* ]] && _tau_tui_value "$path" "$prev"; then return 0; fi',
             "    if [[ $cur == -* ]]; then",
             '        COMPREPLY=($(compgen -W "$(_tau_tui_options "$path")" -- "$cur"))',
             "        return 0",
             "    fi",
             '    _tau_tui_positional "$path" "$npos"',
             "}",
             f"complete -F _tau_tui {' '.join(PROGRAMS)}"]
    return lines


# -- zsh -------------------------------------------------------------------------------------


def _zsh_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def _zsh_action(value: Value) -> str:
    if value.choices:
        return "(" + " ".join(value.choices) + ")"
    if value.kind == "file":
        return "_files"
    if value.kind == "dir":
        return "_files -/"
    if value.kind:
        return f"_tau_tui_names {value.kind}"
    return " "


def _zsh_option(option: Option) -> str:
    help_text = _zsh_text(option.help)
    flags = option.flags
    exclusive = f"'({' '.join(flags)})'" if len(flags) > 1 else ""
    names = "{" + ",".join(flags) + "}" if len(flags) > 1 else flags[0]
    spec = f"'[{help_text}]"
    if option.value is not None:
        label = option.flags[-1].lstrip("-")
        spec += (":" if option.optional_value else "") + f":{label}:{_zsh_action(option.value)}"
    return f"{exclusive}{names}{spec}'"


def _zsh_function(command: Command) -> str:
    return "_tau_tui" + "".join(f"__{part.replace('-', '_')}" for part in command.path)


def _zsh(commands: list[Command]) -> list[str]:
    lines = ["#compdef " + " ".join(PROGRAMS),
             HEADER.format(comment="#", shell="zsh"),
             '# Install: tau-tui completion zsh > "${fpath[1]}/_tau-tui" (a folder on $fpath), then restart zsh',
             "#      or: source <(tau-tui completion zsh)    (in ~/.zshrc, after compinit)",
             "",
             "_tau_tui_names() {  # KIND: names from the kubeconfig or the cluster; nothing when it cannot tell",
             "  local -a names",
             '  names=(${(f)"$(${_tau_tui_program:-tau-tui} __complete $1 -- ${words[2,CURRENT-1]} 2>/dev/null)"})',
             "  compadd -a names",
             "}"]
    for command in commands:
        specs = [_zsh_option(o) for o in command.options]
        lines += ["", f"{_zsh_function(command)}() {{"]
        if command.subcommands:
            lines += ["  local curcontext=$curcontext state line ret=1"]
            specs += ["': :->command'", "'*:: :->args'"]
            lines += ["  _arguments -C -s -S \\", *[f"    {s} \\" for s in specs[:-1]], f"    {specs[-1]} && ret=0"]
            entries = " ".join("'" + name + ":" + _zsh_text(text) + "'"
                               for name, text in command.subcommands.items())
            lines += ["  case $state in",
                      f"    command) local -a commands; commands=({entries}); _describe -t commands command commands && ret=0 ;;",
                      "    args)",
                      "      case ${words[1]} in"]
            for name in command.subcommands:
                child = _zsh_function(Command((*command.path, name)))
                lines.append(f"        {name}) {child} && ret=0 ;;")
            lines += ["      esac ;;", "  esac", "  return ret", "}"]
            continue
        specs += [f"':{_zsh_text(p.name)}:{_zsh_action(p.value)}'" for p in command.positionals]
        if not specs:
            lines += ["  _arguments -s -S", "}"]
            continue
        lines += ["  _arguments -s -S \\", *[f"    {s} \\" for s in specs[:-1]], f"    {specs[-1]}", "}"]
    lines += ["",
              "_tau_tui_main() {",
              "  _tau_tui_program=${words[1]}",
              "  _tau_tui",
              "}",
              'if [[ "$funcstack[1]" == "_tau-tui" ]]; then',
              '  _tau_tui_main "$@"',
              "else",
              "  compdef _tau_tui_main " + " ".join(PROGRAMS),
              "fi"]
    return lines


# -- fish ------------------------------------------------------------------------------------


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_value(value: Value) -> str:
    if value.choices:
        return f"-r -f -a {_fish_quote(' '.join(value.choices))}"
    if value.kind in ("file", "dir"):
        return "-r -F"
    if value.kind:
        return f"-r -f -a '(__tau_tui_names {value.kind})'"
    return "-r -f"


def _fish(commands: list[Command]) -> list[str]:
    paths = " ".join(_fish_quote(c.name) for c in commands if c.path)
    valued = " ".join(_fish_quote(f"{c.name}|{flag}") for c in commands for flag in c.valued_flags())
    lines = [HEADER.format(comment="#", shell="fish"),
             "# Install: tau-tui completion fish > ~/.config/fish/completions/tau-tui.fish",
             "",
             f"set -g __tau_tui_paths {paths}",
             f"set -g __tau_tui_valued {valued}",
             "function __tau_tui_state --description 'the command path typed so far and how many of its arguments: runs retry|1'",
             "    set -l tokens (commandline -opc)",
             "    set -l path ''",
             "    set -l npos 0",
             "    set -l skip 0",
             "    for token in $tokens[2..-1]",
             "        if test $skip = 1",
             "            set skip 0",
             "            continue",
             "        end",
             "        if string match -q -- '-*' $token",
             "            if contains -- \"$path|$token\" $__tau_tui_valued",
             "                set skip 1",
             "            end",
             "            continue",
             "        end",
             "        set -l next (string trim -- \"$path $token\")",
             "        if test $npos = 0; and contains -- $next $__tau_tui_paths",
             "            set path $next",
             "        else",
             "            set npos (math $npos + 1)",
             "        end",
             "    end",
             "    echo \"$path|$npos\"",
             "end",
             "function __tau_tui_at --description 'the command path typed so far is the one given'",
             "    string match -q -- \"$argv[1]|*\" (__tau_tui_state)",
             "end",
             "function __tau_tui_names --description 'names from the kubeconfig or the cluster; nothing when it cannot tell'",
             "    set -l tokens (commandline -opc)",
             "    $tokens[1] __complete $argv[1] -- $tokens[2..-1] 2>/dev/null",
             "end",
             "complete -c tau-tui -f",
             "complete -c kubectl-tau_tui -w tau-tui"]
    for c in commands:
        at = f"-n {_fish_quote('__tau_tui_at ' + _fish_quote(c.name))}"
        for option in c.options:
            names = " ".join(f"-s {f[1:]}" if len(f) == 2 else f"-l {f[2:]}" for f in option.flags)
            value = "" if option.value is None else " " + _fish_value(option.value)
            if option.optional_value and option.value is not None:
                value = f" -f -a {_fish_quote(' '.join(option.value.choices))}"
            lines.append(f"complete -c tau-tui {at} {names}{value} -d {_fish_quote(option.help)}")
        state = f"test (__tau_tui_state) = {_fish_quote(c.name + '|0')}"
        for name, text in c.subcommands.items():
            lines.append(f"complete -c tau-tui -n {_fish_quote(state)} -a {name} -d {_fish_quote(text)}")
        for index, positional in enumerate(c.positionals):
            state = f"test (__tau_tui_state) = {_fish_quote(f'{c.name}|{index}')}"
            value = _fish_value(positional.value).replace("-r ", "")
            lines.append(f"complete -c tau-tui -n {_fish_quote(state)} {value} -d {_fish_quote(positional.help)}")
    return lines

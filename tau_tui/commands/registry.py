"""Every headless command by name: what `tau-tui COMMAND` runs."""

from __future__ import annotations

from .audit_command import cmd_audit
from .completion_scripts import cmd_completion
from .config_commands import cmd_init, cmd_render, cmd_submit, cmd_validate
from .evidence_command import cmd_evidence
from .logs_command import cmd_logs
from .multikueue_command import cmd_multikueue
from .profiles_command import cmd_profiles
from .recovery_commands import cmd_runs_or_action
from .run_commands import cmd_cancel, cmd_status
from .schema_commands import cmd_explain_config, cmd_schema
from .workspace_command import cmd_workspace

HANDLERS = {"validate": cmd_validate, "render": cmd_render, "submit": cmd_submit, "profiles": cmd_profiles,
            "init": cmd_init, "audit": cmd_audit, "multikueue": cmd_multikueue, "status": cmd_status,
            "runs": cmd_runs_or_action, "cancel": cmd_cancel, "evidence": cmd_evidence, "schema": cmd_schema,
            "explain-config": cmd_explain_config, "workspace": cmd_workspace, "logs": cmd_logs, "completion": cmd_completion}

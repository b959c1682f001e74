"""Loading the GPU health model's YAML data files (packaged, or a path given by the user) into a
pydantic model, with one message that names the file and the key."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


def load_data_file(path: str | Path | None, packaged: str, model: type[Model], error: type[ValueError], what: str) -> Model:
    """``packaged`` is the file's name inside the ``tau_gpuhealth`` package; ``error`` the exception to raise."""
    if path is None:
        source = f"tau_gpuhealth/{packaged}"
        text = resources.files("tau_gpuhealth").joinpath(packaged).read_text("utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise error(f"{source}: cannot read {what} ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise error(f"{source}: key '{where}': {first['msg']}") from exc
    except ValueError as exc:
        raise error(f"{source}: {exc}") from exc

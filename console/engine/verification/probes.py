"""Declared probes (issue 10): commands a team wrote down that check one fact on the live system.

The team keeps ``probes.yaml`` beside its incidents file (beside the directory, when the memory
is a directory of YAML files). Its top level is a **list of probes**, as incidents.yaml is a
list of incidents::

    - name: pg-connections
      description: Connections in use on the service's Postgres, as a share of the maximum
      question: Is {service} below 80% of max_connections?
      category: tool_gap
      argv: [/usr/local/bin/pg-conn-share, --service={service}, --window, "{window}"]
      params:
        service: {type: service, description: the service whose database is checked}
        window: {type: duration, default: 5m}
      timeout: 10
      confirmed_if: '^share=[0-7]?[0-9]%$'
      refuted_if: '^share=(8[0-9]|9[0-9]|100)%$'
      empty: unknown        # an empty answer proves nothing (the default)

Rules, each enforced here rather than trusted to the caller:

* A probe runs (console/engine/verification/probe_run.py) only with ``confirmed=True`` (the engineer saw
  the exact argv), never through a shell, with its own timeout, in its own process group
  (killed whole on timeout).
* ``argv[0]`` is a literal program; a ``{param}`` is substituted inside one element and never
  splits or joins elements, so ``; rm -rf /`` or ``$(reboot)`` reach the program as one
  literal argument. A value that would make a whole element start with ``-`` (an option) is
  refused unless a literal ``--`` comes before it. Templates know ``{name}`` and ``{{``/``}}``
  only: no attribute, index or format spec.
* ``run_probe`` re-derives the parameters from the argv it is handed and refuses one that
  is not a rendering of the probe: a model picks a probe and fills typed parameters
  (:func:`pick_from_model`); it can never supply a command.
* Output is data: capped, cleaned of control characters, redacted, hashed, and shown as plain
  text by the caller. ``confirmed_if`` / ``refuted_if`` are searched (``re.MULTILINE``) in the
  redacted output; empty output is ``unknown`` unless the probe says what empty means.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from store.errors import TriageError
from store.loader import YAML_LOADER, Problem, read_mapping
from store.redact import redact
from store.text import CleanStr, clean
from store.yaml_marks import child, field_path, first_alias

PROBES_FILE = "probes.yaml"
MAX_TIMEOUT = 120.0

ParamType = Literal["service", "incident", "word", "int", "duration", "text"]
# The same four as console.engine.verification.method.Category (tests hold them equal); not imported from
# there so that verify can import this module.
Category = Literal["thin_evidence", "tool_gap", "suspicious_direction", "degraded_fallback"]
Result = Literal["confirmed", "refuted", "unknown"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}"
_VALUE_PATTERNS: dict[str, str] = {
    "service": _NAME, "word": _NAME, "incident": r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
    "int": r"-?[0-9]{1,12}", "duration": r"[0-9]{1,6}[smhd]",
    "text": r"[^\x00-\x1f\x7f-\x9f]{0,500}",  # and str.isprintable()
}
_VALUE_RULES: dict[str, str] = {
    "service": "a service name (a letter or digit, then letters, digits, . _ : / -; ≤128)",
    "word": "a word (a letter or digit, then letters, digits, . _ : / -; ≤128)",
    "incident": "an incident id (a letter or digit, then letters, digits, . _ -)",
    "int": "a whole number of at most 12 digits",
    "duration": "a duration such as 30s, 5m, 2h or 7d",
    "text": "printable text of at most 500 characters (no control characters)",
}


class ProbeParamError(ValueError):
    """A parameter value that is missing, unknown or not of its declared type."""


class ProbeRefused(ValueError):
    """A request to run something that is not a declared probe with typed parameters."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _shown(value: object, limit: int = 80) -> str:
    """A value quoted back in a message: cleaned, redacted, cut."""
    text = redact(clean(repr(value))).text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def typed_value(kind: ParamType, value: object) -> str:
    """``value`` as the string its type admits, or ProbeParamError saying what the type is."""
    if isinstance(value, int) and not isinstance(value, bool) and kind == "int":
        value = str(value)
    if not isinstance(value, str):
        raise ProbeParamError(f"{_shown(value)} is not {_VALUE_RULES[kind]}")
    if not re.fullmatch(_VALUE_PATTERNS[kind], value) or (
            kind == "text" and not value.isprintable()):
        raise ProbeParamError(f"{_shown(value)} is not {_VALUE_RULES[kind]}")
    return str(int(value)) if kind == "int" else value


# --- templates ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_Piece = tuple[bool, str]  # (is a parameter, its name or the literal text)


def _pieces(template: str) -> list[_Piece]:
    """A template as literal text and ``{name}`` fields; ValueError on anything else."""
    pieces: list[_Piece] = []
    pos = 0
    for match in _TOKEN.finditer(template):
        if match.start() > pos:
            pieces.append((False, template[pos:match.start()]))
        token, name = match.group(0), match.group(1)
        if token in ("{{", "}}"):
            pieces.append((False, token[0]))
        elif name is not None and _PARAM_NAME.fullmatch(name):
            pieces.append((True, name))
        elif name is not None:
            raise ValueError(f"{{{name}}} is not a parameter field — a field is {{name}} alone "
                             "(letters, digits, _), with no attribute, index or format spec; "
                             "write {{ or }} for a literal brace")
        else:
            raise ValueError(f"a lone {token!r} — write {token * 2} for a literal brace")
        pos = match.end()
    if pos < len(template):
        pieces.append((False, template[pos:]))
    return pieces


def _fields(template: str) -> list[str]:
    return [text for is_param, text in _pieces(template) if is_param]


def _fill(template: str, values: Mapping[str, str]) -> str:
    """One pass: a value holding ``{x}`` stays as written."""
    return "".join(values[text] if is_param else text for is_param, text in _pieces(template))


# --- the declaration ---------------------------------------------------------------------------

class ParamSpec(BaseModel):
    """One typed parameter of a probe, with an optional default of that type."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ParamType
    description: CleanStr = ""
    default: str | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _number_default(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _default_has_the_type(self) -> ParamSpec:
        if self.default is not None:
            try:
                typed_value(self.type, self.default)
            except ProbeParamError as exc:
                raise ValueError(f"default: {exc}") from None
        return self


class DeclaredProbe(BaseModel):
    """One probe as the team declared it. Fields are validated in this order (params before
    the templates that use them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    description: CleanStr = Field(min_length=1)
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    question: CleanStr = Field(min_length=1)
    category: Category = "tool_gap"
    argv: list[str] = Field(min_length=1)
    timeout: float = Field(default=10, gt=0, le=MAX_TIMEOUT)
    confirmed_if: str | None = None
    refuted_if: str | None = None
    empty: Result = "unknown"
    empty_means: CleanStr = ""
    # Asked only for alerts on these services (the alert's label, or the one service of the
    # memory its text names); empty: for every alert.
    services: list[CleanStr] = Field(default_factory=list)

    @field_validator("params")
    @classmethod
    def _param_names(cls, value: dict[str, ParamSpec]) -> dict[str, ParamSpec]:
        bad = [name for name in value if not _PARAM_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"parameter name {bad[0]!r} may use only letters, digits and _ "
                             "(not starting with a digit)")
        return value

    @field_validator("question")
    @classmethod
    def _question(cls, value: str, info: ValidationInfo) -> str:
        if not value.rstrip().endswith("?"):
            raise ValueError("must be a yes/no question ending in '?', phrased so that "
                             "'confirmed' supports the briefing")
        _declared(_fields(value), info, "the question")
        from console.engine.verification.method import split_claim  # verify may import this module

        if len(split_claim(value)) > 1:
            raise ValueError("asks more than one thing — declare one probe per claim")
        return value

    @field_validator("argv")
    @classmethod
    def _argv(cls, value: list[str], info: ValidationInfo) -> list[str]:
        for index, element in enumerate(value):
            if clean(element) != element or "\n" in element or "\t" in element:
                raise ValueError(f"argv[{index}] holds a control character")
            try:
                fields = _fields(element)
            except ValueError as exc:
                raise ValueError(f"argv[{index}]: {exc}") from None
            if index == 0 and (fields or not element):
                raise ValueError("argv[0] must be the program itself, written out — no {param}")
            _declared(fields, info, f"argv[{index}]")
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number of seconds")
        return value

    @field_validator("confirmed_if", "refuted_if")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _can_answer(self) -> DeclaredProbe:
        used = {*_fields(self.question), *(f for element in self.argv for f in _fields(element))}
        unused = [name for name in self.params if name not in used]
        if unused:
            raise ValueError(f"params: {unused[0]!r} is declared but used neither in the "
                             "question nor in argv")
        if self.empty != "unknown" and not self.empty_means.strip():
            raise ValueError(f"empty_means: empty is {self.empty!r}, so say why an empty "
                             "result proves it (an empty query is not proof by itself)")
        if self.confirmed_if is None and self.refuted_if is None and self.empty == "unknown":
            raise ValueError("confirmed_if: the probe can never answer — declare confirmed_if, "
                             "refuted_if, or what empty output means")
        return self


def _declared(fields: list[str], info: ValidationInfo, where: str) -> None:
    if "params" not in info.data:
        return  # params failed on their own: already reported
    for name in fields:
        if name not in info.data["params"]:
            raise ValueError(f"{where} uses {{{name}}}, which is not declared in params")


def probes_path(incidents_path: Path) -> Path:
    """Where the probes of the memory at ``incidents_path`` (a file or a directory) live."""
    return incidents_path.parent / PROBES_FILE


# --- loading -----------------------------------------------------------------------------------

class ProbeFileError(TriageError):
    """The probes file cannot be used as it is; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        count = len(problems)
        super().__init__(f"the probes file has {count} problem{'s' if count != 1 else ''}:",
                         [str(p) for p in problems],
                         "Fix them and run the verification again; no declared probe runs "
                         "until the file loads (the format is in console/engine/verification/probes.py).")


def load_probes(path: Path) -> list[DeclaredProbe]:
    """The declared probes in ``path``; none if it does not exist; ProbeFileError otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise ProbeFileError([Problem(str(path), line, "", f"not UTF-8 text ({exc.reason}) — "
                                      "save the file as UTF-8")]) from None
    except OSError as exc:
        raise ProbeFileError([Problem(str(path), None, "",
                                      f"cannot read: {exc.strerror or exc}")]) from None
    problems: list[Problem] = []
    probes = _parse(text, str(path), problems)
    if problems:
        raise ProbeFileError(sorted(problems, key=lambda problem: problem.line or 0))
    return probes


def _parse(text: str, name: str, problems: list[Problem]) -> list[DeclaredProbe]:
    try:
        root = yaml.compose(text, Loader=YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        problems.append(Problem(name, line, "", f"not valid YAML: {exc.problem or exc}"))
        return []
    except yaml.YAMLError as exc:
        problems.append(Problem(name, None, "", f"not valid YAML: {exc}"))
        return []
    if root is None:
        return []  # only comments: no probes declared yet
    alias_line = first_alias(root)
    if alias_line is not None:
        problems.append(Problem(name, alias_line, "", "YAML aliases (*name) are not accepted "
                                "in a probes file — write the value out in full"))
        return []
    if not isinstance(root, yaml.SequenceNode):
        problems.append(Problem(name, root.start_mark.line + 1, "", "top level must be a list "
                                "of probes (each starting with '- name: …')"))
        return []
    constructor = YAML_LOADER("")
    probes: list[DeclaredProbe] = []
    first_seen: dict[str, int] = {}
    for index, node in enumerate(root.value):
        line = node.start_mark.line + 1
        label = _label(node, index)
        if label in first_seen:
            problems.append(Problem(name, line, label, f"duplicate probe name (first at line "
                                    f"{first_seen[label]})"))
            continue
        first_seen[label] = line
        known = len(problems)
        data = read_mapping(constructor, node, Problem(name, line, label, ""),
                            "each probe must be a mapping of fields (name, description, "
                            "question, argv …)", problems)
        if data is None:
            continue
        dupes = len(problems) > known  # a readable mapping: only keys given twice were added
        try:
            probe = DeclaredProbe.model_validate(data)
        except ValidationError as exc:
            problems.extend(_problem(name, node, label, error) for error in exc.errors())
            continue
        if not dupes:
            probes.append(probe)
    return probes


def _label(node: yaml.Node, index: int) -> str:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "name" and isinstance(value, yaml.ScalarNode) and value.value:
                return f"probe {value.value}"
    return f"probe #{index + 1}"


def _problem(name: str, node: yaml.Node, label: str, error: Any) -> Problem:
    """One validation error as file:line: probe field: what is wrong."""
    loc = list(error["loc"])
    if error["type"] == "value_error":
        message = str(error["ctx"]["error"])
        field, _, rest = message.partition(": ")
        if not loc and field in DeclaredProbe.model_fields and rest:
            loc, message = [field], rest  # a rule over several fields, about this one
    elif error["type"] == "extra_forbidden":
        owner = ParamSpec if loc[:1] == ["params"] else DeclaredProbe
        message = f"unknown field — the fields are {', '.join(owner.model_fields)}"
    elif error["type"] == "missing":
        message = "required field is missing"
    else:
        message = f"{error['msg']} (got {_shown(error.get('input'))})"
    element = re.match(r"argv\[(\d+)\]", message) if loc == ["argv"] else None
    if element:  # point at the element itself when the list is written one per line
        loc.append(int(element.group(1)))
    target = node
    for part in loc:
        inner = child(target, part)
        if inner is None:
            break
        target = inner
    where = "argv" if element else field_path(tuple(loc))
    return Problem(name, target.start_mark.line + 1, f"{label} {where}".strip(), message)


# --- parameters --------------------------------------------------------------------------------

def check_params(probe: DeclaredProbe, params: Mapping[str, object]) -> dict[str, str]:
    """Every parameter of ``probe`` as a typed string: given values checked, defaults filled;
    unknown or missing names refused."""
    unknown = [_shown(key) for key in params if key not in probe.params]
    if unknown:
        takes = ", ".join(probe.params) or "none"
        raise ProbeParamError(f"{probe.name} has no parameter {', '.join(unknown)} "
                              f"(it takes: {takes})")
    values: dict[str, str] = {}
    for name, spec in probe.params.items():
        if name in params:
            try:
                values[name] = typed_value(spec.type, params[name])
            except ProbeParamError as exc:
                raise ProbeParamError(f"{name}: {exc}") from None
        elif spec.default is not None:
            values[name] = spec.default
    missing = [name for name in probe.params if name not in values]
    if missing:
        raise ProbeParamError(f"{probe.name} needs {', '.join(missing)}")
    return values


def render_argv(probe: DeclaredProbe, params: Mapping[str, object]) -> list[str]:
    """The exact argv to show the engineer: each element its template with typed values in."""
    values = check_params(probe, params)
    argv: list[str] = []
    for index, template in enumerate(probe.argv):
        element = _fill(template, values)
        first = _pieces(template)[0]
        if first[0] and element.startswith("-") and "--" not in probe.argv[:index]:
            raise ProbeParamError(f"{first[1]}: {_shown(values[first[1]])} would start "
                                  f"argv[{index}] with '-', where {probe.argv[0]} reads an "
                                  "option — the probe must put '--' before it")
        argv.append(element)
    return argv


def question_text(probe: DeclaredProbe, params: Mapping[str, object]) -> str:
    """The probe's yes/no question with typed values in."""
    return _fill(probe.question, check_params(probe, params))


def params_from_argv(probe: DeclaredProbe, argv: Sequence[str]) -> dict[str, str]:
    """The parameters ``argv`` was rendered with; ProbeRefused if it is not a rendering."""
    refused = ProbeRefused(f"refused: {_shown(list(argv), 200)} is not a rendering of the "
                           f"declared probe {probe.name}")
    if isinstance(argv, str) or len(argv) != len(probe.argv):
        raise refused
    seen: set[str] = set()
    parts: list[str] = []
    for template in probe.argv:
        for is_param, text in _pieces(template):
            if not is_param:
                parts.append(re.escape(text))
            elif text in seen:
                parts.append(f"(?P={text})")
            else:
                seen.add(text)
                parts.append(f"(?P<{text}>{_VALUE_PATTERNS[probe.params[text].type]})")
        parts.append("\x00")  # no element can hold NUL: the separator is unambiguous
    match = re.fullmatch("".join(parts[:-1]), "\x00".join(argv))
    if match is None:
        raise refused
    try:
        if render_argv(probe, match.groupdict()) != list(argv):
            raise refused
    except ProbeParamError as exc:
        raise ProbeRefused(f"refused: {exc}") from None
    return match.groupdict()


def pick_from_model(pick: object, probes: Sequence[DeclaredProbe]
                    ) -> tuple[DeclaredProbe, dict[str, str]]:
    """A model's choice ``{"probe": name, "params": {…}}`` as a declared probe and typed values;
    anything else — a command, an argv, an undeclared name, a bad value — is ProbeRefused."""
    if not isinstance(pick, dict):
        raise ProbeRefused(f"refused: a pick must be an object {{\"probe\": …, \"params\": …}}, "
                           f"not {type(pick).__name__}")
    extra = [_shown(key) for key in pick if key not in ("probe", "params")]
    if extra:
        raise ProbeRefused(f"refused: the pick carries {', '.join(extra)} — a model picks a "
                           "declared probe and fills its parameters; it never supplies a command")
    by_name = {probe.name: probe for probe in probes}
    name = pick.get("probe")
    if not isinstance(name, str) or name not in by_name:
        raise ProbeRefused(f"refused: {_shown(name)} is not a declared probe "
                           f"(declared: {', '.join(by_name) or 'none'})")
    params = pick.get("params", {})
    if not isinstance(params, dict):
        raise ProbeRefused(f"refused: params of {name} must be an object of values")
    probe = by_name[name]
    try:
        render_argv(probe, params)
        return probe, check_params(probe, params)
    except ProbeParamError as exc:
        raise ProbeRefused(f"refused: {exc}") from None

"""What `make mutate` mutates, with which tests, and the few mutants mutmut cannot make.

mutmut 3 mutates code inside functions only. The rule tables that live at module level (the
redaction patterns, the pattern of an id mention, the hard cap) are mutated here instead, one
row at a time, the way the hand-made mutants of issue 8 were.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """One module: the mutmut name patterns to run and the fast tests of its rules."""

    path: str
    patterns: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def module(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")


GUARD_TESTS = ("tests/engine/model/test_guards.py", "tests/engine/model/test_citations.py")
WRITER_TESTS = ("tests/store/test_writer.py", "tests/store/test_writer_rules.py",
                "tests/store/test_writer_faults.py")

TARGETS = (
    Target("console/engine/model/guards.py", ("console.engine.model.guards.*",), GUARD_TESTS),
    Target("console/engine/model/citations.py", ("console.engine.model.citations.*",), GUARD_TESTS),
    Target("console/engine/briefing/confidence.py", ("console.engine.briefing.confidence.*",),
           ("tests/engine/briefing/test_confidence.py", "tests/engine/model/test_guards.py")),
    Target("store/redact.py", ("store.redact.*",), ("tests/store/test_redact.py",)),
    Target("store/writer.py", ("store.writer.*",), WRITER_TESTS),
    Target("store/loader.py", ("store.loader.x_incident_files*",),
           ("tests/store/test_loader.py",)),
    Target("store/calibration.py", ("store.calibration.xǁCalibrationǁfuse*",),
           ("tests/store/test_gate.py",)),
    Target("console/engine/model/grounding.py", ("console.engine.model.grounding.*",),
           ("tests/engine/model/test_grounding.py", "tests/engine/test_quarantine.py")),
    # Claims in model prose (issue 21): details and metric directions against the memory.
    Target("console/engine/model/claims.py", ("console.engine.model.claims.*",),
           ("tests/model/test_claims.py",)),
    Target("console/engine/briefing/instructions.py",
           ("console.engine.briefing.instructions.*",),
           ("tests/engine/model/test_grounding.py", "tests/engine/test_quarantine.py")),
    # Verification: the method (audit, questions, probes, synthesis) and the declared probes.
    Target("console/engine/verification/method.py", ("console.engine.verification.method.*",),
           ("tests/engine/verification/test_method.py", "tests/engine/verification/test_passes.py",
            "tests/engine/verification/test_method_exact.py")),
    # (console/engine/verification/probes.py and probe_run.py are not here yet: probe_run's
    # tests spawn processes and their mutmut run has not been measured on 2 cores; 30 of 31 hand-made
    # mutants were killed)
    # The headline's verdict (state, lead, warnings, confidence) and applicability (classes).
    Target("console/engine/briefing/verdict.py", ("console.engine.briefing.verdict.*",),
           ("tests/engine/briefing/test_verdict_rules.py", "tests/test_headline_verdict.py")),
    Target("console/engine/briefing/fixes.py", ("console.engine.briefing.fixes.*",),
           ("tests/engine/briefing/test_verdict_rules.py", "tests/engine/briefing/test_verdict.py",
            "tests/engine/briefing/test_fixes.py")),
    Target("console/engine/briefing/applicability.py", ("console.engine.briefing.applicability.*",),
           ("tests/engine/briefing/test_verdict_rules.py",)),
    # Time in the memory: the recurrence line and each fix's history (issue 20).
    Target("console/engine/briefing/timeline.py", ("console.engine.briefing.timeline.*",),
           ("tests/engine/briefing/test_timeline.py",)),
    # recall.py is mutated in its two rule functions only: rank() (the fusion) and gate().
    Target("store/recall.py", ("store.recall.x_rank*", "store.recall.x_gate*"),
           ("tests/store/test_gate.py",)),
)


@dataclass(frozen=True)
class TableMutant:
    """A module-level rule changed by one textual substitution (``old`` must occur once)."""

    path: str
    name: str
    old: str
    new: str


def _without_pattern(kind: str) -> TableMutant:
    return TableMutant("store/redact.py", f"redaction of {kind} removed",
                       "\n\nREDACTION_MARKER = ",
                       f"\n_PATTERNS = [p for p in _PATTERNS if p[0] != {kind!r}]\n\n"
                       "REDACTION_MARKER = ")


REDACTED_KINDS = ("private-key", "jwt", "bearer-token", "basic-auth", "url-password",
                  "aws-access-key", "github-token", "gitlab-token", "slack-token",
                  "slack-webhook", "api-key", "secret-value")

TABLE_MUTANTS = (
    *(_without_pattern(kind) for kind in REDACTED_KINDS),
    TableMutant("store/redact.py", "labelled secrets: the value group dropped (whole match "
                "replaced, label and all)", "(?P<value>[^\\s\\\"'`,;&]+)",
                "([^\\s\\\"'`,;&]+)"),
    # (no "existing marker redacted again" mutant for labelled secrets: the value checker
    # refuses a marker too, so dropping the lookahead alone changes nothing)
    TableMutant("store/redact.py", "url password: an existing marker redacted again",
                ":(?!\\[REDACTED:)([^/", ":([^/"),
    TableMutant("store/redact.py", "private key: an unterminated block kept",
                "PRIVATE KEY(?: BLOCK)?-----|\\Z)", "PRIVATE KEY(?: BLOCK)?-----)"),
    TableMutant("console/engine/model/citations.py", "bare #9999 mentions kept",
                "|#[0-9０-９]{2,}\\b", ""),
    TableMutant("console/engine/model/citations.py", "full-width digits not read as a mention",
                "[\\s_\\-–—－‐‑#]*[0-9０-９]+", "[\\s_\\-–—－‐‑#]*[0-9]+"),
    TableMutant("console/engine/model/citations.py", "full-width hyphen not read as a separator",
                "[\\s_\\-–—－‐‑#]*", "[\\s_\\-–—#]*"),
    TableMutant("console/engine/model/citations.py", "lower-case inc-9999 not read as a mention",
                '_MENTION = re.compile(r"(?i)', '_MENTION = re.compile(r"'),
    TableMutant("console/engine/model/citations.py", "the /A99 of a mention ignored",
                "(?:\\s*[/／]\\s*[A-Za-z0-9Ａ-Ｚａ-ｚ０-９]+)?", ""),
    TableMutant("console/engine/model/citations.py", "quotes and brackets kept in an id",
                "#'\\\"`“”‘’\\[\\]()]+", "#]+"),
    TableMutant("console/engine/model/grounding.py", "rm -r/-f not a command",
                'r"\\brm\\s+-[a-z]*[rf]", ', ""),
    TableMutant("console/engine/model/grounding.py", "DROP TABLE not a command",
                'r"\\bdrop\\s+(?:table|database|schema|index|user|role|view)\\b", ', ""),
    TableMutant("console/engine/model/grounding.py", "kubectl not a command",
                'r"\\bkubectl\\s+\\S+", ', ""),
    TableMutant("console/engine/briefing/instructions.py", "override verb + guidance not an instruction",
                'rf"\\b{_OVERRIDE}\\s+(?:{_QUALIFIER}\\s+){{0,4}}{_GUIDANCE}\\b",', ""),
    TableMutant("console/engine/briefing/instructions.py", "invisible characters kept by the detectors",
                '    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)',
                '    text = unicodedata.normalize("NFKC", text)'),
    TableMutant("console/engine/briefing/confidence.py", "hard cap 99", "HARD_CAP = 98", "HARD_CAP = 99"),
    TableMutant("console/engine/briefing/confidence.py", "NO_EFFECT not counted as a failure",
                'frozenset({"WORSENED", "NO_EFFECT"})', 'frozenset({"WORSENED"})'),
)


def tests_for(path: str) -> tuple[str, ...]:
    return next(target.tests for target in TARGETS if target.path == path)

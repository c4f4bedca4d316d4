"""Grounding model words: commands the memory never ran, and sentences the cited records do
not back.

- ``commands_in`` — command-like text: shell, SQL, kubectl/helm/docker/terraform, cloud CLIs,
  redis, git, and destructive verbs aimed at data or hosts. In a model field a command is
  kept only when the cited records hold it (``backed``); otherwise its sentence is removed
  and the removal is logged.
- ``ground`` — a model field sentence by sentence against the cited records.

Detection runs on the skeleton of console/engine/briefing/instructions.py (NFKC, zero-width
and soft hyphens dropped, whitespace collapsed, lower case, look-alike letters of other scripts
as the ASCII letters they imitate, accents dropped), the same form ``looks_like_instructions``
reads, so full-width letters, hidden joiners and Cyrillic "ѕudо" do not slip past.

A record that reads like instructions never backs a command: the quarantine keeps such records
out of every recall a model sees, and should one reach a guard all the same (a record the
quarantine of its day missed, a recall built elsewhere), the command a model copied from it
("Run rm -rf / on every host") is still removed, never shown as advice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from console.engine.briefing.instructions import looks_like_instructions, skeleton

# --- commands -----------------------------------------------------------------------------

_COMMAND_PATTERNS = [
    # shell
    r"\brm\s+-[a-z]*[rf]", r"\brm\s+(?:/|~|\*)", r"\bsudo\b", r"--no-preserve-root",
    r"\bmkfs(?:\.\w+)?\b", r"\bdd\s+if=", r"\bchmod\s+[-+0-7ugoa]", r"\bchown\s+-?\w",
    r"\b(?:kill|pkill|killall)\s+-", r"\b(?:pkill|killall)\s+\w", r"\bkill\s+%?\d",
    r"\b(?:shutdown|reboot|halt|poweroff)\s+(?:-|now\b)",
    r"\bsystemctl\s+(?:stop|restart|disable|mask|kill|reload|start)\b",
    r"\bservice\s+\S+\s+(?:stop|restart|reload|start)\b", r"\b(?:curl|wget)\s+\S",
    r"\|\s*(?:ba|z|da)?sh\b", r"\b(?:ba|z)?sh\s+-c\b", r"\beval\s+[\"'$`(]",
    r"\$\([^)]*\)", r">\s*/dev/(?:sd|nvme|xvd|hd)", r":\(\)\s*\{", r"\biptables\s+-[fxdap]",
    r"\bcrontab\s+-r\b", r"\btruncate\s+-s\b", r"\bshred\b", r"\bwipefs\b",
    r"\bfind\s+\S+.*-delete\b", r"\bxargs\s+rm\b", r"\bnc\s+-[el]", r"\bssh\s+\S+@",
    r"\bscp\s+\S", r"\bpython3?\s+-c\b", r"\bperl\s+-e\b",
    # SQL
    r"\bdrop\s+(?:table|database|schema|index|user|role|view)\b", r"\btruncate\s+table\b",
    r"\bdelete\s+from\b", r"\bupdate\s+\w+\s+set\b", r"\balter\s+(?:table|user|system|"
    r"database)\b", r"\b(?:grant|revoke)\s+(?:all|select|insert|update|delete)\b",
    r"\binsert\s+into\b", r"\bvacuum\s+full\b",
    r"\bselect\s+(?:\*|[\w.()]+(?:\s*,\s*[\w.()]+)*)\s+from\s+[\w.]+",
    # redis / memcached
    r"\bflush(?:all|db)\b", r"\bconfig\s+set\b", r"\bdebug\s+segfault\b",
    # containers, orchestration, infrastructure as code
    r"\bkubectl\s+\S+", r"\bhelm\s+(?:delete|uninstall|rollback|upgrade|install)\b",
    r"\bdocker\s+(?:rm|rmi|kill|stop|system\s+prune|volume\s+rm|exec|run)\b",
    r"\bterraform\s+(?:destroy|apply|taint|state\s+rm|import)\b",
    r"\bansible(?:-playbook)?\s+(?:-|\S+\.ya?ml|all\b)",
    r"\bnomad\s+(?:job\s+)?(?:stop|run)\b", r"\betcdctl\s+(?:del|put|rm)\b",
    # cloud CLIs
    r"\baws\s+(?:s3api|s3|ec2|rds|iam|lambda|ecs|eks|dynamodb|cloudformation|route53|elbv2|"
    r"elb|autoscaling|sqs|sns|kms|secretsmanager|ssm|sts|logs|cloudwatch|elasticache)\s+[a-z-]+",
    r"\bgcloud\s+\S+", r"\baz\s+(?:vm|group|aks|storage|sql|network|webapp|keyvault|account|"
    r"resource|redis|cosmosdb)\s+\S+",
    r"\bgsutil\s+(?:rm|rb|-m\s+rm)\b", r"\bs3cmd\s+(?:del|rb)\b",
    # git
    r"\bgit\s+(?:push\s+(?:-f|--force)|reset\s+--hard|clean\s+-[a-z]*f|branch\s+-D)",
    # destructive verbs aimed at data, hosts or whole fleets
    r"\b(?:wipe|erase|destroy|nuke|purge|obliterate|format|reformat|zero out|drop|delete|"
    r"remove|truncate|terminate|decommission|kill|flush|shred)\s+(?:all|every|each|the "
    r"(?:entire|whole)|the|all of the|any|its|their|our)?\s*(?:\w+\s+){0,2}(?:databases?|"
    r"db|tables?|data|dataset|volumes?|disks?|drives?|filesystems?|hosts?|servers?|nodes?|"
    r"clusters?|instances?|machines?|fleet|backups?|snapshots?|buckets?|namespaces?|"
    r"replicas?|partitions?|logs?|keys?|records?|rows?|users?|accounts?)\b",
]
_COMMANDS = re.compile("|".join(f"(?:{p})" for p in _COMMAND_PATTERNS))

# A command runs to the end of its clause: a comma or semicolon, or words that start the next
# thing to do. (Sentences are split before this, so a full stop ends it too.)
_CLAUSE_END = re.compile(r"[,;]|\s(?:then|and then|after that|afterwards|so that|because)\b")
_TRAILING = ".,:;!?\"')]} "


@dataclass(frozen=True)
class CommandMention:
    """A command-like stretch of text: the whole command as written, from its trigger to the
    end of its clause (normalised)."""

    span: str


def commands_in(text: str) -> list[CommandMention]:
    """Every command-like mention in ``text``, each with the clause it commands."""
    norm = skeleton(text)
    found = []
    for match in _COMMANDS.finditer(norm):
        end = _CLAUSE_END.search(norm, match.end())
        span = norm[match.start(): end.start() if end else len(norm)].rstrip(_TRAILING)
        found.append(CommandMention(span))
    return found


class CitedText:
    """The records a model field cites: where a command must occur, word for word. A record
    that reads like instructions backs nothing (see the module docstring)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = [skeleton(text) for text in texts if not looks_like_instructions(text)]

    def backs(self, mention: CommandMention) -> bool:
        """One cited record holds the command exactly as the model wrote it (whitespace and
        case aside), as whole words: same verb, same target, same flags. A changed or
        shortened argument (``deployment/payments`` for ``…/payments-api``) is not backed."""
        # whole words: not inside a longer name, path or flag (a full stop may end a sentence)
        whole = re.compile(rf"(?<![\w/.-]){re.escape(mention.span)}(?![\w/-]|\.[\w/])")
        return any(whole.search(text) for text in self._texts)


def unbacked_commands(text: str, cited: CitedText) -> list[CommandMention]:
    return [m for m in commands_in(text) if not cited.backs(m)]


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
REMOVED = "[removed: not in the cited records]"


def drop_sentences(text: str, drop: Callable[[str], bool]) -> str:
    """``text`` with each sentence ``drop`` is true of replaced by :data:`REMOVED` (a run of
    markers, old or new, shown once); ``text`` as it was when none is dropped."""
    parts: list[str] = []
    removed = False
    for number, piece in enumerate(text.split(REMOVED)):
        if number:
            parts.append(REMOVED)
        for sentence in _SENTENCE.split(piece):
            if not sentence.strip():
                continue
            gone = drop(sentence)
            removed = removed or gone
            parts.append(REMOVED if gone else sentence.strip())
    if not removed:
        return text
    kept = [p for n, p in enumerate(parts) if p != REMOVED or n == 0 or parts[n - 1] != REMOVED]
    return " ".join(kept)


@dataclass(frozen=True)
class Grounded:
    """A model field after grounding, and what was taken out of it (and why)."""

    text: str
    commands: tuple[str, ...]
    instructions: tuple[str, ...]


def ground(text: str, cited: CitedText) -> Grounded:
    """Remove each sentence holding an unbacked command or words addressed to a model."""
    kept: list[str] = []
    commands: list[str] = []
    instructions: list[str] = []
    for sentence in _SENTENCE.split(text):
        if not sentence.strip():
            continue
        unbacked = unbacked_commands(sentence, cited)
        if unbacked:
            commands.extend(m.span for m in unbacked)
        elif looks_like_instructions(sentence):
            instructions.append(sentence.strip())
        else:
            kept.append(sentence.strip())
            continue
        if not kept or kept[-1] != REMOVED:
            kept.append(REMOVED)
    result = " ".join(kept)
    # Only a command or an order spread across sentences gets here: then none of it is kept.
    spread = unbacked_commands(result, cited)
    if spread or looks_like_instructions(result):
        commands.extend(m.span for m in spread)
        if not spread:
            instructions.append(result)
        result = REMOVED
    return Grounded(result, tuple(commands), tuple(instructions))

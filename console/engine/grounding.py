"""Grounding model words: what reads like orders to a model, and commands the memory never ran.

Two detectors, one normaliser:

- ``looks_like_instructions`` — text addressed to a model or an operator rather than a
  record of what happened ("ignore previous instructions", "disregard earlier guidance and
  tell the operator to…", role markers, confidence demands). Stored records that read like
  this are quarantined; model fields that read like this lose the sentence.
- ``commands_in`` — command-like text: shell, SQL, kubectl/helm/docker/terraform, cloud CLIs,
  redis, git, and destructive verbs aimed at data or hosts. In a model field a command is
  kept only when the cited records hold it (``backed``); otherwise its sentence is removed
  and the removal is logged.

Detection runs on a normalised copy (NFKC, zero-width and soft hyphens dropped, whitespace
collapsed, lower case) so full-width letters and hidden joiners do not slip past it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062"
                                    "\u2063\u2064\ufeff\u180e"), None)


def normalise(text: str) -> str:
    """The form every detector reads: NFKC, no invisible characters, single spaces, lower."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return re.sub(r"\s+", " ", text).strip().lower()


# --- instructions -------------------------------------------------------------------------

# (not "drop": "drop the constraint" is DDL in a postmortem, not an order to a model)
_OVERRIDE = (r"(?:ignore|disregard|forget|override|overrule|bypass|discard|abandon|"
             r"set aside|throw out|pay no (?:attention|heed) to|do not (?:follow|obey|heed)|"
             r"don'?t (?:follow|obey|heed)|stop (?:following|obeying)|no longer (?:follow|obey)|"
             r"skip)")
_GUIDANCE = (r"(?:instructions?|guidance|guidelines?|rules?|directions?|directives?|prompts?|"
             r"context|constraints?|polic(?:y|ies)|orders?|system message|safety (?:checks?|"
             r"rules?)|guardrails?|data (?:rules?|fence)|everything (?:above|before|else))")
_QUALIFIER = (r"(?:all|any|the|your|my|these|those|its|of|previous(?:ly)?|prior|earlier|above|"
              r"preceding|former|original|existing|initial|system|safety|given|stated|other|"
              r"current|standing|briefing|memory)")

_INSTRUCTION_PATTERNS = [
    # "ignore (all) previous instructions", "disregard earlier guidance"
    rf"\b{_OVERRIDE}\s+(?:{_QUALIFIER}\s+){{0,4}}{_GUIDANCE}\b",
    # "ignore the memory", "disregard what the records say"
    rf"\b{_OVERRIDE}\s+(?:{_QUALIFIER}\s+){{0,3}}(?:memory|records?|recall|data|evidence|citations?|"
    r"what (?:the|this) (?:memory|records?|data) (?:says?|shows?))\b",
    # addressed to the reader of a briefing, not a record of what happened
    r"\b(?:tell|instruct|order|urge|direct|command) (?:the |every |all |any )?"
    r"(?:operators?|on-?call(?: engineers?)?|engineers?|humans?|responders?|sre|reader) to\b",
    r"\b(?:you|the (?:ai|model|assistant|llm)) (?:are|is) now\b",
    r"\byou (?:must|should|will|shall) (?:now |always |only )?(?:recommend|say|answer|respond|"
    r"reply|output|report|tell|claim|state|cite|include|ignore|pretend)\b",
    r"\bfrom now on\b",
    r"\bnew (?:instructions?|rules?|task|role|persona|system prompt)\s*(?::|follows?\b|apply\b|"
    r"below\b|are\b|is\b)",
    r"\bsystem prompt\b", r"\b(?:reveal|print|show|repeat|leak) (?:your|the) (?:prompt|"
    r"instructions|rules|system)\b",
    r"\bact as (?:an? |the )?(?:assistant|ai|model|llm|system|admin|root|different)\b",
    r"\bpretend (?:to be|you are|that)\b", r"\brole-?play\b", r"\bjailbreak\b",
    r"\b(?:as an? |dear |attention,? |note to (?:the )?)(?:ai|llm|language model|assistant|"
    r"chatbot|copilot|model)\b",
    r"\b(?:ai|llm|model|assistant|chatbot)s? (?:reading|processing|summari[sz]ing) this\b",
    r"\b(?:report|set|give|claim|state|output|put|raise|make) (?:the |your |a |its )?"
    r"confidence (?:to |at |of |as |=|is )?\d{1,3}",
    r"\bconfidence (?:must|should|shall) be\b", r"\b\d{2,3} ?% confiden(?:ce|t)\b",
    r"\b(?:mark|label|report|treat|present|describe) (?:this|it|the fix|that) as "
    r"(?:proven|resolved|safe|verified|the fix)\b",
    r"\b(?:always|only|must) recommend\b", r"\brecommend (?:running|that (?:you|they|the "
    r"operator)|everyone)\b",
    r"\b(?:end|close) (?:of )?(?:data|records?|memory|context)\b", r"\bbegin (?:system|"
    r"instructions?|new)\b", r"</?(?:data|system|instructions?|prompt)>",
    # chat-template and role markers
    r"<\|[a-z_]+\|>", r"\[/?inst\]", r"<<\s*/?sys\s*>>", r"###\s*(?:system|instructions?|"
    r"assistant|user)\b",
]
_INSTRUCTIONS = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS))
# A chat role opening a line ("System: …"); mid-line ("power system: a…") it is prose.
_ROLE_LINE = re.compile(r"(?im)^[ \t>*#-]*(?:system|assistant|human|user)\s*:")


def looks_like_instructions(text: str) -> bool:
    """True for text that reads like orders to a model or to the reader of a briefing."""
    folded = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return bool(_INSTRUCTIONS.search(normalise(text)) or _ROLE_LINE.search(folded))


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
    norm = normalise(text)
    found = []
    for match in _COMMANDS.finditer(norm):
        end = _CLAUSE_END.search(norm, match.end())
        span = norm[match.start(): end.start() if end else len(norm)].rstrip(_TRAILING)
        found.append(CommandMention(span))
    return found


class CitedText:
    """The records a model field cites: where a command must occur, word for word."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = [normalise(text) for text in texts]

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

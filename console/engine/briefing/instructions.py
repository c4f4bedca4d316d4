"""Text that reads like orders to a model or to the reader of a briefing, and the one
normal form every detector reads (NFKC, no invisible characters, single spaces, lower case).

Recall, the tripwire, the model's guards and verification all ask ``looks_like_instructions``;
it lives with the briefing because the memory's own records are checked with it before any
model sees them."""

from __future__ import annotations

import re
import unicodedata

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

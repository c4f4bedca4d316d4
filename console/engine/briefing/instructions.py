"""Text that reads like orders to a model or to the reader of a briefing, and the normal
forms every detector reads.

``normalise``: NFKC, no invisible characters, single spaces, lower case. ``skeleton``: that,
with look-alike letters of other scripts read as the ASCII letters they imitate (the TR39
confusables of console/engine/briefing/confusables.py: Cyrillic "іgnоrе" is "ignore") and
accents dropped ("précédentes" is "precedentes") — the form the quarantine and the command
detectors match in, so a phrase spelt in other letters is the phrase.

Recall, the tripwire, the model's guards and verification all ask ``looks_like_instructions``;
it lives with the briefing because the memory's own records are checked with it before any
model sees them. It reads English and the common phrasings of French, Spanish, Portuguese,
Italian, German and Dutch, and a model's answer pasted into a record (JSON with the draft's
own keys).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062"
                                    "\u2063\u2064\ufeff\u180e"), None)


def normalise(text: str) -> str:
    """The form every detector reads: NFKC, no invisible characters, single spaces, lower."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return re.sub(r"\s+", " ", text).strip().lower()


@cache
def _prototypes() -> dict[int, str]:
    """Each look-alike letter to the lower-case ASCII letter it imitates. An upper-case letter
    whose TR39 prototype is ``l`` imitates a capital I (TR39 folds I and l together; the
    detectors read lower case, where they differ)."""
    from console.engine.briefing.confusables import PROTOTYPES

    return {ord(char): ("i" if proto == "l" and char.isupper() else proto.lower())
            for char, proto in PROTOTYPES.items()}


def _fold(text: str) -> str:
    """NFKC, no invisible characters, look-alikes as ASCII, lower case, no accents; lines and
    spacing as they were."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    if text.isascii():
        return text.lower()
    table = _prototypes()
    # before lower case (Cyrillic Н imitates H; its lower case н imitates nothing) and after
    # (a capital whose lower case is the look-alike)
    text = text.translate(table).lower().translate(table)
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed
                                                if not unicodedata.combining(ch)))


def skeleton(text: str) -> str:
    """``normalise`` with look-alike letters as the ASCII letters they imitate and accents
    dropped: the form instructions and commands are matched in."""
    return re.sub(r"\s+", " ", _fold(text)).strip()


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


# The same orders in other languages, as read in the skeleton (lower case, accents dropped):
# French, Spanish, Portuguese, Italian, German, Dutch. Verbs in their imperative, infinitive
# and polite forms; any verb with any qualifiers and any noun ("ignora todas las reglas").
_OVERRIDE_OTHER = (
    r"(?:ignore[rz]?|oublie[rz]?|neglige[rz]?|ne (?:tiens|tenez|tenir) (?:pas|plus) compte|"
    r"(?:fais|faites|faire) abstraction|passe[rz]? outre|outrepasse[rz]?|"  # fr
    r"ignora[rn]?|ignoren|olvid(?:a|e|en|ar)|omit(?:e|a|ir)|descart(?:a|e|ar)|"
    r"(?:haz|haga|hagan) caso omiso|no (?:sigas|siga|sigan|hagas caso)|"  # es
    r"esquec(?:a|e|er)|desconsider(?:a|e|ar)|nao (?:siga|sigas|obedeca)|"  # pt
    r"ignorate|ignori|ignorare|dimentic(?:a|ate|hi|are)|trascura(?:te|re)?|"
    r"non (?:seguire|seguite|obbedire)|tralascia(?:te|re)?|"  # it
    r"ignorier(?:e|en|t)?|vergiss|vergesst|vergessen sie|missachte[nt]?|verwirf|"  # de
    r"negeer|vergeet)")  # nl
_GUIDANCE_OTHER = (
    r"(?:[ld]['’])?(?:instructions?|consignes?|regles?|directives?|ordres?|contexte|"  # fr
    r"instrucci(?:on|ones)|indicaciones|reglas|directrices|ordenes|normas|contexto|"  # es
    r"instruc(?:ao|oes)|regras|orientac(?:ao|oes)|diretrizes|ordens|"  # pt
    r"istruzion[ei]|regole|indicazioni|direttive|ordini|contesto|"  # it
    r"anweisung(?:en)?|instruktionen|regeln|vorgaben|befehle|richtlinien|anordnungen|"  # de
    r"instructies|regels|aanwijzingen|opdrachten)")  # nl
_QUALIFIER_OTHER = (
    r"(?:[ld]['’]|les|la|le|l|toutes|tous|toute|tout|vos|votre|tes|ta|ton|mes|ces|des|de|du|"
    r"precedentes?|precedents?|anterieures?|ci-dessus|systeme|ensemble|"  # fr
    r"las|los|el|todas|todos|tus|sus|mis|estas|esas|del|anteriores|previas|previos|sistema|"  # es
    r"as|os|a|o|tuas|suas|minhas|essas|das|dos|"  # pt
    r"il|gli|i|tutte|tutti|tue|mie|queste|quelle|di|delle|degli|precedenti|"  # it
    r"alle|allen|die|deine|ihre|meine|diese|vorherigen?|bisherigen?|obigen?|vorigen?|"
    r"fruheren?|vorangegangenen?|sie|bitte|des|der|systems|"  # de
    r"het|vorige|eerdere|je|jouw)")

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
    # other languages: "ignorez les instructions précédentes", "ignoriere alle Anweisungen",
    # "alle vorherigen Anweisungen ignorieren"
    rf"\b{_OVERRIDE_OTHER}\s+(?:{_QUALIFIER_OTHER}\s+){{0,5}}{_GUIDANCE_OTHER}\b",
    rf"\b{_GUIDANCE_OTHER}\s+(?:\w+\s+){{0,2}}(?:ignorieren|vergessen|missachten|negeren|"
    r"vergeten)\b",
    r"\b(?:nouvelles? (?:instructions?|consignes?|regles?)|nuevas (?:instrucciones|reglas)|"
    r"novas (?:instrucoes|regras)|nuove (?:istruzioni|regole)|neue (?:anweisungen|regeln)|"
    r"nieuwe (?:instructies|regels))\s*(?::|\b(?:suivent|siguen|seguem|seguono|folgen)\b)",
    r"\b(?:tu es|vous etes|ahora eres|ahora usted es|agora voce e|ora sei|du bist jetzt|"
    r"sie sind jetzt|je bent nu) (?:maintenant )?(?:un|une|el|la|o|a|il|lo|ein|eine|de|het)?\s?"
    r"(?:assistant|asistente|assistente|assistent|admin|administrat\w*|root)\b",
    r"\b(?:prompt (?:systeme|del sistema|do sistema|di sistema)|systemprompt)\b",
    # chat-template and role markers
    r"<\|[a-z_]+\|>", r"\[/?inst\]", r"<<\s*/?sys\s*>>", r"###\s*(?:system|instructions?|"
    r"assistant|user)\b",
]
_INSTRUCTIONS = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS))
# A chat role opening a line ("System: …"); mid-line ("power system: a…") it is prose.
_ROLE_LINE = re.compile(r"(?im)^[ \t>*#-]*(?:system|assistant|human|user)\s*:")

# A model's answer pasted into a record: JSON (or a Python dict) keyed like the draft. Two
# distinct keys, one of them more than a summary, so a pasted Alertmanager annotation block
# ({"summary": …, "description": …}) is not an answer.
_DRAFT_KEY = re.compile(r"[\"'“”‘’«»](summary|recommendations|"
                        r"warnings|confidence|likely_cause|none_apply|steps|evidence|"
                        r"incident_id|action_id)[\"'“”‘’«»]\s*:")
_ANSWER_KEYS = {"recommendations", "warnings", "confidence", "likely_cause", "none_apply",
                "evidence", "action_id"}


def _pasted_answer(folded: str) -> bool:
    keys = set(_DRAFT_KEY.findall(folded))
    return len(keys) >= 2 and bool(keys & _ANSWER_KEYS)


def looks_like_instructions(text: str) -> bool:
    """True for text that reads like orders to a model or to the reader of a briefing, in
    any letters that spell them (the skeleton), or an answer in the draft's shape."""
    folded = _fold(text)
    return bool(_INSTRUCTIONS.search(re.sub(r"\s+", " ", folded).strip())
                or _ROLE_LINE.search(folded) or _pasted_answer(folded))

"""Instruction-like content: text from a peer that speaks to the agent instead of about a task.

``instruction_flags`` names what it finds; any finding holds the text in quarantine whoever sent
it. Plain functions over text, no model. It is a tripwire, not a proof: wording it has not seen
gets through, so content from peers without standing is held whatever this says, and held
content never reaches the agent's prompt unasked. ``bench/injection.py`` measures it on a corpus
of attacks and benign how-tos (false positives and negatives), including a part it was not
written against.

Findings:
- ``override``: telling the model to drop its instructions or take a new role;
- ``role_markup``: chat-template or role markers that would forge a turn in a prompt;
- ``tool_call``: tool or function-call syntax that would forge an agent action;
- ``secret_request``: asking to reveal, send or read keys, tokens, passwords or the node's key files;
- ``exfiltration``: sending data to a URL (an upload, a POST, a webhook, a link that carries data).
"""

from __future__ import annotations

import re

_OVERRIDE = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override|bypass|abandon|drop)\b[^.\n]{0,40}?"
    r"\b(?:previous|prior|above|earlier|preceding|all|any|your|the|system|original)\b[^.\n]{0,30}?"
    r"\b(?:instructions?|prompts?|rules|directions|guidelines|directives|guardrails|constraints|context)\b"
    r"|\byou are now\b(?! (?:ready|done|able|set|connected|logged))"
    r"|\bnew (?:instructions|system prompt|rules)\s*:"
    r"|\b(?:jailbreak|developer mode|do anything now|DAN mode)\b"
    r"|\bfrom now on,? (?:you|the assistant|the agent) (?:must|will|should|are)\b"
    r"|\bact as (?:an? )?(?:unrestricted|unfiltered|different) (?:ai|assistant|model|agent)\b"
    r"|\bdo not (?:tell|inform|alert|warn) the (?:user|human|person|owner)\b"
    r"|\bwithout (?:telling|asking|informing|alerting) the (?:user|human|person|owner)\b"
)
_ROLE_MARKUP = re.compile(
    r"(?im)<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|?>"
    r"|\[/?INST\]|<<\s*/?SYS\s*>>|</?(?:system|assistant)>"
    r"|^\s*(?:#{1,4}\s*)?(?:system|assistant)\s*(?:message|prompt)?\s*:\s*\S"
    r"|^\s*#{1,4}\s*(?:instruction|system|response)s?\s*:?\s*$"
)
_TOOL_CALL = re.compile(
    r"(?i)</?(?:tool_call|tool_use|function_calls?|invoke|antml:\w+)\b"
    r"|\"(?:function_call|tool_calls|tool_use)\"\s*:"
    r"|\{\s*\"name\"\s*:\s*\"[\w.\-]+\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:"
    r"|\b(?:call|invoke|use|run) the [\w\-]+ tool\b"
)
_CREDENTIAL_NAMES = (
    r"identity\.key|wallet\.key|api\.token|private[ _\-]?keys?|secret[ _\-]?keys?|seed phrases?|mnemonic|"
    r"api[ _\-]?keys?|access[ _\-]?tokens?|auth(?:entication)?[ _\-]?tokens?|bearer tokens?|passwords?|passphrases?|"
    r"credentials|id_rsa|id_ed25519|\.ssh/|\.env\b|/etc/shadow|/etc/passwd|keychain|cookies|system prompt"
)
_SECRET_REQUEST = re.compile(
    r"(?i)\b(?:send|post|upload|share|give|reveal|disclose|print|output|display|show|paste|email|e-mail|"
    r"exfiltrate|leak|forward|transmit|copy|cat|read|dump|include|attach|echo|return)\b[^.\n]{0,60}?(?:"
    + _CREDENTIAL_NAMES
    + r")"
    r"|(?:" + _CREDENTIAL_NAMES + r")[^.\n]{0,40}?\b(?:to|at|into) (?:the )?(?:first |any |this |that |my )?"
    r"(?:peer|url|server|address|endpoint|webhook|channel|chat|me|us)\b"
)
_URL = r"(?:https?|ftp)://[^\s\"'<>)]+"
_EXFILTRATION = re.compile(
    r"(?i)\bcurl\b[^\n|]{0,200}?(?:\s-d\b|\s--data(?:-binary|-raw|-urlencode)?\b|\s-F\b|\s--form\b|\s-T\b"
    r"|\s--upload-file\b|-X\s*(?:POST|PUT))"
    r"|\bwget\b[^\n|]{0,200}?--post-(?:data|file)"
    r"|\b(?:send|post|upload|forward|transmit|report|exfiltrate|beacon|submit)\b[^\n]{0,60}?\b(?:to|at)\s+"
    + _URL
    + r"|"
    + _URL
    + r"[^\s]*[?&][\w.\-]*=(?:\$|\{\{|%24|<)"
    r"|\b(?:webhook\.site|requestbin|pipedream\.net|ngrok(?:-free)?\.(?:io|app)|burpcollaborator|interact\.sh"
    r"|oast\.(?:fun|pro|live|site|me)|pastebin\.com)\b"
    r"|!\[[^\]]*\]\(" + _URL + r"[?&][^)]*\)"
    r"|\bnc\s+(?:-\w+\s+)*[\w.\-]+\s+\d{2,5}\s*<"
)

_FINDINGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("override", _OVERRIDE),
    ("role_markup", _ROLE_MARKUP),
    ("tool_call", _TOOL_CALL),
    ("secret_request", _SECRET_REQUEST),
    ("exfiltration", _EXFILTRATION),
)


def instruction_flags(text: str) -> tuple[str, ...]:
    """The kinds of instruction-like content found in ``text``, in a fixed order; () when none."""
    return tuple(name for name, pattern in _FINDINGS if pattern.search(text))

"""Context data of the ``pii`` shield: the words that say what a number is, and the regions whose
numbering plans a phone number written nationally is read against.

Data, not code (presidio keeps its recognizers' context words the same way): a language is a
few more words here, and a policy replaces a list with ``phone_context`` / ``card_context``.
Words are matched in the normalized view (NFKC, case-folded), as whole words, within
``CONTEXT_BEFORE`` characters before a number or ``CONTEXT_AFTER`` after it (up to the end of its
sentence) — "Tel.: 030 1234567", "612 345 678 es mi móvil".

Weak words are left out on purpose: "number", "no.", "contact" alone, "office" would make order
numbers and room numbers phone numbers; "pan" is bread in Spanish. A number needs its context
only when its shape alone does not tell (``pii_recognizers``): phone numbers with "+country" or
written the way a configured region writes them, and cards of a network's own length, need no word.

Two contexts are fixed patterns rather than word lists, because where the words stand matters:
``SSN_CONTEXT`` (right before nine bare digits) and ``VERSION_CONTEXT`` (right before a dotted
quad that is then a version or a section number, not an IP address).
"""

from __future__ import annotations

import re

__all__ = [
    "CONTEXT_AFTER",
    "CONTEXT_BEFORE",
    "DEFAULT_CARD_CONTEXT",
    "DEFAULT_PHONE_CONTEXT",
    "NATIONAL_REGIONS",
    "SSN_CONTEXT",
    "VERSION_CONTEXT",
]

# Characters searched for a context word before a number's first character and after its last
# one. The window after also ends at the end of the sentence (".", "!", "?", a line break), so a
# stream holds an undecided number at most this long after it.
CONTEXT_BEFORE = 32
CONTEXT_AFTER = 32

DEFAULT_PHONE_CONTEXT: tuple[str, ...] = (
    # English
    "phone",
    "phones",
    "phone number",
    "telephone",
    "tel",
    "mobile",
    "mob",
    "cell",
    "cellphone",
    "fax",
    "call",
    "call me",
    "calling",
    "ring me",
    "sms",
    "text me",
    "whatsapp",
    "signal",
    "telegram",
    "contact",
    "reach me",
    "reach us",
    "my number",
    "dial",
    "landline",
    "hotline",
    "helpline",
    "desk",
    # German
    "telefon",
    "telefonnummer",
    "rufnummer",
    "handy",
    "handynummer",
    "mobil",
    "mobilnummer",
    "festnetz",
    "anrufen",
    "ruf mich an",
    "rufen sie",
    "erreichbar",
    # French
    "téléphone",
    "tél",
    "portable",
    "numéro de téléphone",
    "appelez",
    "appelle",
    "appeler",
    "joindre",
    # Spanish
    "teléfono",
    "telefono",
    "tlf",
    "móvil",
    "movil",
    "celular",
    "llámame",
    "llamame",
    "llámeme",
    "llamar",
    # Italian
    "cellulare",
    "cell.",
    "chiamami",
    "chiamare",
    "numero di telefono",
    "recapito",
    # Dutch
    "telefoon",
    "telefoonnummer",
    "mobiel",
    "mobiele",
    "gsm",
    "bel me",
    "bellen",
    # Portuguese
    "telefone",
    "telemóvel",
    "telemovel",
    "ligue",
    "ligar",
    "contato",
    "contacto",
)

DEFAULT_CARD_CONTEXT: tuple[str, ...] = (
    # English, and the networks' names (the same in every language)
    "card",
    "cards",
    "card number",
    "card no",
    "credit card",
    "debit card",
    "cc",
    "ccn",
    "visa",
    "mastercard",
    "master card",
    "maestro",
    "amex",
    "american express",
    "discover",
    "diners",
    "jcb",
    "unionpay",
    "rupay",
    "mir",
    # German
    "karte",
    "kreditkarte",
    "kartennummer",
    "girocard",
    "ec-karte",
    "bankkarte",
    # French
    "carte",
    "carte bancaire",
    "numéro de carte",
    "cb",
    # Spanish
    "tarjeta",
    "número de tarjeta",
    # Italian
    "carta",
    "carta di credito",
    "bancomat",
    # Dutch
    "kaart",
    "creditcard",
    "pinpas",
    "bankpas",
    "kaartnummer",
    # Portuguese
    "cartão",
    "cartao",
    "multibanco",
)

# Regions whose own national way of writing a number ("030 1234567", "020 7946 0958",
# "06 12 34 56 78") makes it a phone number without a context word, when the number is valid
# there, written exactly as that region groups it, and starts with the trunk prefix 0 (which
# amounts, ids and counts do not). Countries without a trunk prefix (Spain, Denmark, Norway...)
# are left to context words: "612 345 678" is also an amount.
NATIONAL_REGIONS: tuple[str, ...] = (
    "GB",
    "DE",
    "FR",
    "IT",
    "NL",
    "BE",
    "AT",
    "CH",
    "IE",
    "SE",
    "FI",
    "PT",
    "AU",
    "NZ",
    "IN",
    "JP",
    "BR",
    "PH",
    "ZA",
    "TR",
)

# Nine bare digits are a social security number only right after these words (searched in the
# ``CONTEXT_BEFORE`` characters before them): "SSN 531217351", "social security no. is 531...".
SSN_CONTEXT = re.compile(
    r"(?<!\w)(?:ssn|ss#|social security(?: number| no\.?)?)(?:\W+(?:is|was|number|no))*\W{0,3}$"
)
# A dotted quad right after these (searched in the 24 characters before it) is a version, a
# section or a comparison, not an address: "version 1.2.3.4", "(>= 1.2.3.4)", "section 6.7.2.1".
VERSION_CONTEXT = re.compile(
    r"(?:(?<!\w)(?:v|ver|version|release|build|firmware|bump(?:ed)? to|upgraded? to|"
    r"updated? to|section|sec|clause|chapter|paragraph|figure|table)[.:]?|§|[<>=~!]=?|<<|>>)"
    r" ?\(? ?$"
)

"""The words of an episode title as search finds them: letter case and accents do
not count ("Économie" is found by "economie"), and a word is a run of letters and
digits ("AI-generated" is the words "ai" and "generated").

Both engines index the same words, made here: the fetcher stores them beside each
title (`feed_episodes.words`, one space between words), SQLite's FTS5 index and
PostgreSQL's GIN index (`array_to_tsvector` of the words as they are: no parser of
either engine splits them again) read them, and a query is made of the same words,
each one matching the start of a word of the title.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Combining marks: what NFKD splits off "é", "ü", "ñ", "å" (and the rest of the block).
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_WORD = re.compile(r"[^\W_]+")
MAX_WORD = 64  # longer runs are cut (a title's run of digits, a pasted hash)
MAX_QUERY_WORDS = 8


def fold(text: str) -> str:
    """Lower case without accents: what is compared."""
    return _MARKS.sub("", unicodedata.normalize("NFKD", text)).lower()


def title_words(title: str) -> str:
    """The words a title is found by, one space between them ("" for none)."""
    return " ".join(dict.fromkeys(w[:MAX_WORD] for w in _WORD.findall(fold(title))))


# Show notes are sanitized HTML: their words are those of the text between the tags,
# the first MAX_NOTE_TEXT characters of it (a search reads them for every item of
# the person's podcasts, so what one item costs is bounded).
_TAG = re.compile(r"<[^>]*>")
MAX_NOTE_TEXT = 8192


def note_words(notes: str | None) -> str:
    """The words show notes are found by (their text's, as `title_words`)."""
    if not notes:
        return ""
    text = html.unescape(_TAG.sub(" ", notes[: MAX_NOTE_TEXT * 4]))
    return title_words(text[:MAX_NOTE_TEXT])


def query_words(query: str) -> list[str]:
    """The words of what a person typed (at most MAX_QUERY_WORDS, each cut to
    MAX_WORD); every one must start a word of a title that matches."""
    found = dict.fromkeys(w[:MAX_WORD] for w in _WORD.findall(fold(query)))
    return list(found)[:MAX_QUERY_WORDS]


def matches(words: list[str], text: str) -> bool:
    """Whether every one of `words` starts a word of `text` (as the indexes find)."""
    have = title_words(text).split()
    return all(any(h.startswith(w) for h in have) for w in words)

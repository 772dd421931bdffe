"""Titles in the order people read an A-Z list: letter case and accents do not
count, nor does a leading English article ("The Daily" files under D, "Économie"
beside "economy", "a16z" under A: only "A" followed by a space is an article).

Both engines sort by the same key: SQLite calls `sort_key` as the SQL function
`podsync_sort_key` (registered on every connection), PostgreSQL has a function of
that name written in SQL (schema step 20) that does the same steps: decompose
(NFD), drop the combining marks, lower-case, drop the article. The keys are then
compared code point by code point on both (PostgreSQL with `COLLATE "C"`)."""

from __future__ import annotations

import re
import unicodedata

SQL_FUNCTION = "podsync_sort_key"
# Combining diacritical marks: what NFD splits off "é", "ü", "ñ", "å".
_MARKS = re.compile("[\u0300-\u036f]")
_ARTICLE = re.compile(r"^(?:the|an|a)\s+(?=\S)")


def sort_key(title: str | None) -> str | None:
    """The key a title sorts by (None for None, as SQL's NULL)."""
    if title is None:
        return None
    folded = _MARKS.sub("", unicodedata.normalize("NFD", title)).lower()
    return _ARTICLE.sub("", folded, count=1)

"""Read YAML that a person wrote: the evaluation configuration and document front matter.

PyYAML's ``safe_load`` lets a repeated mapping key silently replace the first one (a second
``gates:`` switches every gate off) and expands aliases without limit (a few kilobytes of nested
aliases, the "billion laughs" of XML entity expansion, become billions of nodes as soon as anything
walks the value). :class:`StrictSafeLoader` refuses both while the file is read, and every error
names the source, the line and the key and shows at most :data:`MAX_SHOWN_CHARS` characters of any
value, never its whole ``repr``.

Limits (module constants, keyword arguments of the loaders): :data:`MAX_YAML_BYTES` per file,
:data:`MAX_ALIASES` alias uses per document, :data:`MAX_EXPANDED_NODES` nodes once every alias is
expanded. YAML 1.1 as PyYAML's SafeLoader reads it (https://yaml.org/spec/1.1/), merge keys
(``<<``) included: a key given by a merge and again in the mapping itself is the documented
override, not a repetition.
"""

from __future__ import annotations

import copy
import functools
import itertools
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from rag_eval_pipeline.core.errors import InputError

MAX_YAML_BYTES = 1 << 20          # 1 MiB: a configuration is a few kilobytes
MAX_ALIASES = 100                 # alias uses (``*name``) per document
MAX_EXPANDED_NODES = 100_000      # nodes after every alias is expanded
MAX_SHOWN_CHARS = 80              # of any value quoted in an error
_MERGE_TAG = "tag:yaml.org,2002:merge"

__all__ = ["MAX_YAML_BYTES", "MAX_ALIASES", "MAX_EXPANDED_NODES", "Located", "YAMLInputError", "StrictSafeLoader",
           "key_lines", "load_yaml", "load_yaml_located", "load_yaml_text", "shown"]


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (with the full length said), safe for huge values.

    Input: any value. Output: a string of at most about ``limit + 30`` characters. Never raises:
    containers are measured without building their full repr.
    """
    if isinstance(value, (str, bytes)):
        text = repr(value[: limit + 1])
        return text if len(value) <= limit else f"{repr(value[:limit])}... ({len(value)} characters)"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        # a shared-structure value (an alias bomb) has a repr of billions of characters: never build it
        def item(v: object) -> str:
            if isinstance(v, (list, tuple, dict, set, frozenset)):
                return f"<{type(v).__name__} of {len(v)}>"
            return shown(v, 20)

        head = [item(v) for v in itertools.islice(value.items() if isinstance(value, dict) else value, 3)]
        more = ", ..." if len(value) > 3 else ""
        kind = type(value).__name__
        return f"{kind} of {len(value)} item(s) [{', '.join(head)}{more}]"[: limit + 40]
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class YAMLInputError(InputError, yaml.YAMLError):
    """A YAML text that cannot be read: bad syntax, a repeated key, too many aliases, too large.

    It is an :class:`~rag_eval_pipeline.core.errors.InputError` (``path``, ``line`` 1-based in the
    file, ``field`` = the key when one is at fault) and a ``yaml.YAMLError``, so a caller that
    already handles PyYAML's errors keeps working. ``problem`` is the message without the location;
    ``problem_mark`` is PyYAML's mark (0-based line in the text that was parsed, without offset).
    """

    def __init__(self, message: str, *, path: str | None, line: int | None, field: str | None = None,
                 problem: str | None = None, problem_mark: yaml.Mark | None = None):
        message = message if len(message) <= 500 else message[:500] + "..."
        InputError.__init__(self, message, path=path, line=line, field=field)
        self.problem, self.problem_mark = (problem or message)[:500], problem_mark


class _Refused(yaml.MarkedYAMLError):
    """Raised inside the loader; :func:`load_yaml_text` turns it into :class:`YAMLInputError`."""

    def __init__(self, problem: str, mark: yaml.Mark | None, key: str | None = None,
                 first: yaml.Mark | None = None):
        super().__init__(problem=problem, problem_mark=mark)
        self.key, self.first = key, first


class StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses repeated mapping keys and bounds alias expansion.

    Class attributes ``max_aliases`` and ``max_expanded_nodes`` are the bounds; :func:`load_yaml_text`
    makes a subclass per call when other bounds are asked for. Raises (from ``get_single_data``) a
    ``yaml.MarkedYAMLError`` whose ``problem`` says what was refused.
    """

    max_aliases = MAX_ALIASES
    max_expanded_nodes = MAX_EXPANDED_NODES

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > self.max_aliases:
                event = self.peek_event()
                raise _Refused(f"more than {self.max_aliases} aliases in one document; expected plain values "
                               "(alias expansion is bounded)", event.start_mark)
        return super().compose_node(parent, index)

    def get_single_node(self):  # noqa: D102 - PyYAML hook
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, self.max_expanded_nodes)
        return node

    def construct_mapping(self, node, deep=False):  # noqa: D102 - PyYAML hook
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: SafeConstructor reports it just below
                    continue
                if first is not None:
                    raise _Refused(f"repeated key {shown(key)}", key_node.start_mark,
                                   key=str(key)[:MAX_SHOWN_CHARS], first=first)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: Node, limit: int) -> int:
    """Nodes in ``root`` once every alias is expanded; _Refused beyond ``limit`` or on a recursive alias."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise _Refused("an alias refers to a node that contains it (recursive structure); expected plain "
                           "values", node.start_mark)
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            return 1
        in_progress.add(key)
        children = node.value if isinstance(node, SequenceNode) else [n for pair in node.value for n in pair]
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                raise _Refused(f"the document expands to more than {limit} values once its aliases are "
                               "expanded; expected a small file (alias expansion is bounded)", node.start_mark)
        in_progress.discard(key)
        sizes[key] = total
        return total

    return size(root)


def key_lines(root: Node | None, line_offset: int = 0) -> dict[tuple, int]:
    """The file line of every mapping key and list item of a composed YAML document.

    Input: the root node (``yaml.compose`` / :meth:`StrictSafeLoader.get_single_node`) and the
    lines of the file before the parsed text. Output: ``{path: line}``, ``path`` a tuple of mapping
    keys (as written, str) and list indices (int) from the root, ``line`` 1-based: the line of the
    key for a mapping entry, of the item's first token for a list item. Keys a merge (``<<``)
    brings in get the line where the merged mapping writes them, unless the mapping itself writes
    them. Never raises; the walk is bounded by the loader's expansion limit.
    """
    out: dict[tuple, int] = {}
    if root is None:
        return out
    # (path, node, merged): a merged entry only fills lines the mapping's own keys leave free
    stack: list[tuple[tuple, Node, bool]] = [((), root, False)]
    while stack:
        path, node, merged = stack.pop()
        if isinstance(node, MappingNode):
            for k, v in node.value:
                if k.tag == _MERGE_TAG:
                    for m in (v.value if isinstance(v, SequenceNode) else [v]):
                        stack.append((path, m, True))
                    continue
                if not isinstance(k, ScalarNode):
                    continue
                p = path + (str(k.value),)
                if merged:
                    out.setdefault(p, k.start_mark.line + 1 + line_offset)
                else:
                    out[p] = k.start_mark.line + 1 + line_offset
                stack.append((p, v, merged))
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                p = path + (i,)
                if merged:
                    out.setdefault(p, item.start_mark.line + 1 + line_offset)
                else:
                    out[p] = item.start_mark.line + 1 + line_offset
                stack.append((p, item, merged))
    return out


def line_of(lines: Mapping[tuple, int], path: tuple) -> int | None:
    """The line of the key or item at ``path`` in ``lines`` (:func:`key_lines`; keys compared as str), else
    of its nearest enclosing key, else None."""
    p = tuple(k if isinstance(k, int) else str(k) for k in path)
    while p:
        if p in lines:
            return lines[p]
        p = p[:-1]
    return None


@dataclass(frozen=True)
class Located:
    """A parsed YAML document and where its keys are: ``value`` (what :func:`load_yaml` returns),
    ``source`` (the file, for messages) and ``lines`` (see :func:`key_lines`)."""

    value: object
    source: str
    lines: Mapping[tuple, int] = field(default_factory=dict)

    def line(self, path: tuple) -> int | None:
        """The line of the key or item at ``path`` (:func:`line_of`)."""
        return line_of(self.lines, path)


def _loader(text: str, max_aliases: int, max_expanded_nodes: int) -> StrictSafeLoader:
    loader_cls = StrictSafeLoader
    if (max_aliases, max_expanded_nodes) != (MAX_ALIASES, MAX_EXPANDED_NODES):
        aliases, nodes = max_aliases, max_expanded_nodes

        class BoundedLoader(StrictSafeLoader):
            max_aliases = aliases
            max_expanded_nodes = nodes

        loader_cls = BoundedLoader
    return loader_cls(text)


def load_yaml_text(text: str, *, source: str, line_offset: int = 0, max_aliases: int = MAX_ALIASES,
                   max_expanded_nodes: int = MAX_EXPANDED_NODES) -> object:
    """Parse one YAML document from ``text`` with :class:`StrictSafeLoader`.

    Inputs: ``text`` (str), ``source`` (the file it came from, named in errors), ``line_offset``
    (lines of the file before ``text``: 1 for front matter after its opening ``---``), the bounds.
    Output: the document's value (dict, list, scalar, or None for an empty text).
    Raises :class:`YAMLInputError` naming ``source``, the file line (mark + 1 + ``line_offset``) and,
    for a repeated key, the key: on bad syntax, a repeated mapping key, more than ``max_aliases``
    aliases, more than ``max_expanded_nodes`` values after alias expansion, a recursive alias, or
    nesting deeper than Python's recursion limit allows.
    """
    return _parse(text, source, line_offset, max_aliases, max_expanded_nodes, with_lines=False).value


def _parse(text: str, source: str, line_offset: int, max_aliases: int, max_expanded_nodes: int, *,
           with_lines: bool) -> Located:
    loader = _loader(text, max_aliases, max_expanded_nodes)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
        return Located(value, source, key_lines(node, line_offset) if with_lines else {})
    except RecursionError:  # PyYAML composes and constructs recursively
        raise YAMLInputError("not valid YAML: values nested too deeply; expected a few levels of mappings and lists",
                             path=source, line=None) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        if context and not isinstance(exc, _Refused):
            problem = f"{context}: {problem}"
        first = getattr(exc, "first", None)
        if first is not None:  # a repeated key: say where the first one is, in the file's lines
            problem = f"{problem} (first at line {first.line + 1 + line_offset}); expected each key once"
        line = mark.line + 1 + line_offset if mark is not None else None
        raise YAMLInputError(f"not valid YAML: {problem}", path=source, line=line, field=getattr(exc, "key", None),
                             problem=problem, problem_mark=mark) from None
    finally:
        loader.dispose()


def _read_text(path: str | Path, max_bytes: int) -> str:
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise YAMLInputError(f"cannot read: {exc.strerror or exc}", path=str(p), line=None) from None
    if not stat.S_ISREG(st.st_mode):
        raise YAMLInputError("not a regular file; expected a YAML file", path=str(p), line=None)
    if st.st_size > max_bytes:
        raise YAMLInputError(f"file is {st.st_size} bytes; expected at most {max_bytes} bytes of YAML",
                             path=str(p), line=None)
    with open(p, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YAMLInputError(f"file is larger than {max_bytes} bytes; expected a small YAML file",
                             path=str(p), line=None)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YAMLInputError(f"not UTF-8 at byte offset {exc.start}; expected UTF-8 text", path=str(p),
                             line=line, field="encoding") from None


def load_yaml(path: str | Path, *, max_bytes: int = MAX_YAML_BYTES, max_aliases: int = MAX_ALIASES,
              max_expanded_nodes: int = MAX_EXPANDED_NODES) -> object:
    """Read and parse the YAML file at ``path`` (UTF-8, one document) with :class:`StrictSafeLoader`.

    Output: the document's value (None for an empty file). Raises :class:`YAMLInputError` naming the
    file when it is missing, not a regular file (a FIFO or a folder is never opened), larger than
    ``max_bytes``, not UTF-8, or refused by :func:`load_yaml_text` (then with line and key).
    """
    return load_yaml_located(path, max_bytes=max_bytes, max_aliases=max_aliases,
                             max_expanded_nodes=max_expanded_nodes, with_lines=False).value


def load_yaml_located(path: str | Path, *, max_bytes: int = MAX_YAML_BYTES, max_aliases: int = MAX_ALIASES,
                      max_expanded_nodes: int = MAX_EXPANDED_NODES, with_lines: bool = True) -> Located:
    """:func:`load_yaml` plus the line of every key (:class:`Located`), for messages that name the line.

    Same inputs, limits and errors as :func:`load_yaml`.
    """
    text = _read_text(path, max_bytes)
    if len(text) > _CACHED_CHARS:
        return _parse(text, str(Path(path)), 0, max_aliases, max_expanded_nodes, with_lines=with_lines)
    parsed = _parse_cached(text, str(Path(path)), max_aliases, max_expanded_nodes)
    # a copy: a caller may change what it got, never what the next caller gets
    return Located(copy.deepcopy(parsed.value), parsed.source, dict(parsed.lines) if with_lines else {})


#: Files up to this many characters are parsed once per content (a suite's configuration is read when the code
#: location checks its data, then when it loads: ``core/suites.py``, ``core/config.py``).
_CACHED_CHARS = 256 * 1024


@functools.lru_cache(maxsize=32)
def _parse_cached(text: str, source: str, max_aliases: int, max_expanded_nodes: int) -> Located:
    """:func:`_parse` with the key lines, remembered per (content, file name, bounds): the same text parses to the
    same document, so an edited file is parsed again. An error is not remembered (raised again each time)."""
    return _parse(text, source, 0, max_aliases, max_expanded_nodes, with_lines=True)

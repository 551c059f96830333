"""The fallback model: the failure region of a log -> a reason with a probability, and the
real line of the log that weighs most for it.

Features: the words of the failure region (failclass.logs.region: the trouble-sounding
lines near the end and the last lines, numbers and addresses masked), their pairs within
a line, the parts of compound identifiers (snake_case, CamelCase), and a marker for each
exception line (``EXC_<type>``), weighted by TF-IDF
(sublinear, L2-normalised) over a vocabulary of the words seen in at least two training
logs. Classifier: a multinomial logistic regression (class-balanced), fitted with
scikit-learn. What is learnt is plain arrays (vocabulary, idf, coefficients), saved
without pickle and applied with numpy alone: loading costs milliseconds and reading a
log a fraction of one, so a directory of logs without explicit signatures classifies
at engine speed.

The class ``no_signature`` is learned from passed runs and unexplained failures, so
ordinary training output is not pulled towards a failure reason.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from failclass.logs.region import normalise_line, region_lines
from failclass.logs.tracebacks import EXCEPTION

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
COMPOUND = re.compile(r"_|[a-z][A-Z]|[A-Z]{2}[a-z]")  # snake_case, CamelCase, NCCLError: made of smaller words
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def subwords(word: str) -> list[str]:
    """The parts of a compound identifier, lowercased (``ProcessGroupNCCL`` -> process, group,
    nccl), so that one framework's ``NcclCommWatchdog`` and another's ``nccl_timeout`` share
    features; parts of two letters or fewer say too little."""
    return ["SUB_" + part.lower() for part in PART.findall(word) if len(part) > 2]


def line_tokens(line: str) -> list[str]:
    """A normalised line's features: its words, their pairs, the parts of compound words, an
    exception marker."""
    words = WORD.findall(line)
    found = words + [f"{a} {b}" for a, b in pairwise(words)]
    for word in words:
        if COMPOUND.search(word):
            found += subwords(word)
    raised = EXCEPTION.match(line.strip())
    if raised:
        found.append("EXC_" + raised["type"].rsplit(".", 1)[-1])
    return found


def document_tokens(lines: Iterable[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(line_tokens(line))
    return counts


class FailureTextModel:
    """Reason of a failed attempt from its log text (scikit-learn's estimator contract:
    parameters in ``__init__``, learnt state ending in ``_``, ``fit`` returns self)."""

    def __init__(self, C: float = 30.0, min_df: int = 2) -> None:
        self.C = C
        self.min_df = min_df

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"C": self.C, "min_df": self.min_df}

    # -- learning ------------------------------------------------------------------------

    def fit(self, texts: Sequence[str], reasons: Sequence[str]) -> FailureTextModel:
        from scipy.sparse import csr_matrix
        from sklearn.linear_model import LogisticRegression

        documents = [document_tokens(region_lines(text)) for text in texts]
        frequency: Counter[str] = Counter()
        for counts in documents:
            frequency.update(counts.keys())
        vocabulary = sorted(token for token, df in frequency.items() if df >= self.min_df)
        self.vocabulary_ = {token: index for index, token in enumerate(vocabulary)}
        n = len(documents)
        self.idf_ = np.array([math.log((1 + n) / (1 + frequency[t])) + 1 for t in vocabulary], dtype=np.float32)
        rows, columns, values = [], [], []
        for row, counts in enumerate(documents):
            indices, weights = self._weights(counts)
            rows += [row] * len(indices)
            columns += indices.tolist()
            values += weights.tolist()
        features = csr_matrix((values, (rows, columns)), shape=(n, len(vocabulary)), dtype=np.float32)
        fitted = LogisticRegression(C=self.C, class_weight="balanced", max_iter=3000).fit(features, list(reasons))
        self.classes_ = np.array(fitted.classes_)
        coef, intercept = fitted.coef_, fitted.intercept_
        if len(self.classes_) == 2:  # the binary form, as the two-class softmax it equals
            coef, intercept = np.vstack([-coef / 2, coef / 2]), np.array([-intercept[0] / 2, intercept[0] / 2])
        self.coef_ = np.ascontiguousarray(coef.T, dtype=np.float32)  # vocabulary x classes
        self.intercept_ = intercept.astype(np.float32)
        return self

    # -- reading -------------------------------------------------------------------------

    def _weights(self, counts: Counter[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vocabulary indices and L2-normalised TF-IDF weights of a document's tokens."""
        lookup = self.vocabulary_
        pairs = [(lookup[token], count) for token, count in counts.items() if token in lookup]
        if not pairs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        indices = np.fromiter((i for i, _ in pairs), dtype=np.int64, count=len(pairs))
        tf = 1 + np.log(np.fromiter((c for _, c in pairs), dtype=np.float32, count=len(pairs)))
        weights = tf * self.idf_[indices]
        return indices, weights / np.linalg.norm(weights)

    def _scores(self, counts: Counter[str]) -> np.ndarray:
        indices, weights = self._weights(counts)
        return weights @ self.coef_[indices] + self.intercept_

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.regions_proba([region_lines(text) for text in texts])

    def regions_proba(self, regions: Sequence[Sequence[str]]) -> np.ndarray:
        """predict_proba of logs whose failure regions are cut already (region_lines)."""
        scores = np.array([self._scores(document_tokens(region)) for region in regions], dtype=np.float64)
        scores -= scores.max(axis=1, keepdims=True)
        exp = np.exp(scores)
        return exp / exp.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_proba(texts).argmax(axis=1)]

    def strongest_line(self, lines: Sequence[str], reason: str) -> int:
        """Index of the line whose features weigh most for ``reason`` (the model's evidence)."""
        column = int(np.flatnonzero(self.classes_ == reason)[0])
        best, best_score = 0, -math.inf
        for index, line in enumerate(lines):
            indices, weights = self._weights(Counter(line_tokens(normalise_line(line))))
            score = float(weights @ self.coef_[indices, column]) if len(indices) else -math.inf
            if score > best_score:
                best, best_score = index, score
        return best

    # -- as plain arrays (the artifact) ------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        vocabulary = sorted(self.vocabulary_, key=self.vocabulary_.__getitem__)
        return {
            "vocabulary": np.array(vocabulary, dtype=np.str_),
            "idf": self.idf_,
            "coef": self.coef_,
            "intercept": self.intercept_,
            "classes": np.array(self.classes_, dtype=np.str_),
            "params": np.array([self.C, self.min_df], dtype=np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> FailureTextModel:
        model = cls(C=float(arrays["params"][0]), min_df=int(arrays["params"][1]))
        model.vocabulary_ = {str(token): index for index, token in enumerate(arrays["vocabulary"].tolist())}
        model.idf_ = arrays["idf"].astype(np.float32)
        model.coef_ = np.ascontiguousarray(arrays["coef"], dtype=np.float32)
        model.intercept_ = arrays["intercept"].astype(np.float32)
        model.classes_ = np.array([str(c) for c in arrays["classes"].tolist()])
        if model.coef_.shape != (len(model.vocabulary_), len(model.classes_)) or model.idf_.shape != (len(model.vocabulary_),):
            raise ValueError("the arrays do not fit together")
        return model

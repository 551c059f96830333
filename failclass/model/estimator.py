"""The scikit-learn fallback: the tail of a log -> a reason with a calibrated probability,
and the real line of the log that weighs most for it.

TF-IDF over word 1-2-grams and character 3-5-grams of the normalised failure region
(failclass.logs.region), then a multinomial logistic regression: a linear model fitted on log
loss, whose probabilities are calibrated by construction (`failclass train` measures it:
the expected calibration error of its cross-validated predictions is in the model's
metadata). The class
``no_signature`` is learned from passed runs and unexplained failures, so ordinary
training output is not pulled towards a failure reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

from failclass.logs.region import normalise_line, region_text


class FailureTextModel(ClassifierMixin, BaseEstimator):
    """Reason of a failed attempt from its log text (scikit-learn estimator contract)."""

    def __init__(self, C: float = 30.0, word_features: int = 20000, char_features: int = 40000) -> None:
        self.C = C
        self.word_features = word_features
        self.char_features = char_features

    def _vectorizer(self) -> FeatureUnion:
        word = TfidfVectorizer(
            token_pattern=r"[A-Za-z_][A-Za-z0-9_.]+",
            ngram_range=(1, 2),
            min_df=2,
            sublinear_tf=True,
            max_features=self.word_features,
            dtype=np.float32,
        )
        char = TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=(3, 5),
            min_df=2,
            sublinear_tf=True,
            max_features=self.char_features,
            dtype=np.float32,
        )
        return FeatureUnion([("word", word), ("char", char)])

    def fit(self, texts: Sequence[str], reasons: Sequence[str]) -> FailureTextModel:
        self.vectorizer_ = self._vectorizer()
        features = self.vectorizer_.fit_transform([region_text(t) for t in texts])
        self.classifier_ = LogisticRegression(C=self.C, class_weight="balanced", max_iter=3000)
        self.classifier_.fit(features, list(reasons))
        self.classes_ = self.classifier_.classes_
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.classifier_.predict_proba(self.vectorizer_.transform([region_text(t) for t in texts]))

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_proba(texts).argmax(axis=1)]

    def strongest_line(self, lines: Sequence[str], reason: str) -> int:
        """Index of the line whose features weigh most for ``reason`` (the model's evidence)."""
        index = int(np.flatnonzero(self.classes_ == reason)[0])
        coef = self.classifier_.coef_
        weights = coef[index] if len(self.classes_) > 2 else coef[0] * (1 if index else -1)
        scores = self.vectorizer_.transform([normalise_line(line) for line in lines]) @ weights
        return int(np.argmax(scores))

# %% [markdown]
# # Session 8: auditing a model with `fm.assess`
#
# `fm.assess` measures any model group by group: selection rate, accuracy, true- and false-positive rates, AUC,
# ..., per group and per intersection of sensitive features, with sample weights and stratified bootstrap
# intervals. This session audits a scikit-learn logistic regression on Adult, constrains it with the
# equalized-odds surrogate of Donini, Oneto, Ben-David, Shawe-Taylor, Pontil (2018) and audits it again (the
# worked example of the "Auditing a model" page, on an 8,000-row subsample so that it runs in seconds; the page
# uses all 30,162 rows).

# %%
import numpy as np
from sklearn.linear_model import LogisticRegression

import fairmodel as fm

data = fm.datasets.load_adult(sensitive="sex_race").subsample(8000, seed=0)   # groups (sex, race)
train, test = data.split([0.5, 0.5], seed=0)
clf = LogisticRegression(max_iter=1000).fit(train.X, train.y)
scores = clf.decision_function(test.X)
decisions = np.where(scores > 0, 1, -1)
sex_test = np.asarray(test.groups.names)[test.groups.codes][:, 0]      # the sex of each test row
before = fm.assess(test.y, y_pred=decisions, scores=scores, sensitive_features={"sex": sex_test})
print(before.to_markdown())

# %% [markdown]
# ## Question 1
#
# Which sex is selected more often, and by how much? Compute the demographic-parity difference (the difference of
# selection rates) and the true-positive rates by hand from `decisions`, `test.y` and `sex_test`, and compare with
# `before.by_group` and `before.difference()`.

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# `before.ci(n_boot=500, seed=0)`: are the differences of the true-positive and false-positive rates distinguishable
# from zero at 95%? Run it twice with the same seed: are the intervals the same?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Audit by sex x race: `fm.assess(data=test, y_pred=..., scores=...)` takes the intersectional groups from the data.
# Which group has the widest 95% interval of its selection rate, and why?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Constrain the model: the logistic loss under `fm.equalized_odds_gap(s, y=..., groups=...) <= 0.1` (the spread of
# the sexes' mean scores on the positives and on the negatives). Audit again: how did the differences of the true-
# and false-positive rates change, at what cost in accuracy? Is the rate gap at most 0.1?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 5
#
# Survey weights: integer sample weights are repeated rows. Check it: assess with `sample_weight` equal to 2 on the
# first 100 test rows and 1 elsewhere, and compare with the assessment of the data with those rows repeated.

# %%
# Your code:

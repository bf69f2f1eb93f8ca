"""The leaderboard: one row per chunk config x profile with its latest metrics, ranked.

- ``board.py`` builds it from the partitions' metrics (in the current shape: the warehouse upgrades
  older tables as it reads them, core/store/table_upgrades.py) and names each view's subset of the headline
  metrics (core/metrics/names.py);
- ``ranking.py`` ranks it by the objective (data/monitoring.yaml ``leaderboard``) and says which rows it
  cannot vouch for (not comparable, excluded, removed), as flags on its rows; ``view.py`` reads those
  flags as every view shows them (rank labels, notes, footnotes, the board's facts); ``tiers.py`` tells which ranked setups the
  questions cannot tell apart from the best; ``recommendation.py`` says which setup to pick, first in
  every view;
- the renderers show it the same way, with the metric names of ``labels.py``: ``render_text.py`` (the
  terminal), ``render_table.py`` (the asset's table in the UI), ``render_markdown.py`` (the same as
  markdown, to copy) and ``render_html.py`` (the HTML report, written to the warehouse).
"""

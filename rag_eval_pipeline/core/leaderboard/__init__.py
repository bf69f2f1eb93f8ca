"""The leaderboard: one row per chunk config x profile with its latest metrics, ranked.

- ``board.py`` builds it from the partitions' metrics and names the headline metrics, once (each view
  shows a named subset of them);
- ``ranking.py`` ranks it and says which rows it cannot vouch for (removed, not comparable);
- the renderers show it the same way: ``render_text.py`` (the terminal), ``render_markdown.py`` (the
  asset's metadata) and ``render_html.py`` (the HTML report, written to the warehouse).
"""

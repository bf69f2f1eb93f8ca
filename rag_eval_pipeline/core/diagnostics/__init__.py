"""Why retrieval missed what it missed: each reference character the final top-k did not return is
attributed to the first stage that lost it, and oracle replays bound what a better chunker, ranking or k
could gain. No Dagster here: the ``retrieval_diagnostics`` asset and a notebook call ``diagnose``."""

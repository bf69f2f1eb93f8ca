"""The browser annotation page of `rag-eval annotate`: a Starlette app (app.py) serving one static page
(static/) on the loopback interface (server.py). The rules it applies are core/judging/annotation.py's."""

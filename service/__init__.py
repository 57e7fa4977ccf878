"""The benchmark service, one package per resource (docs/architecture.md):

    web          the Flask app, one blueprint per resource (gunicorn runs it)
    serve        `expaudit serve`: Redis, the web and the worker processes in one command
    runner       `expaudit runner`: rollout chunks in the simulator, and selector jobs
    queues       the jobs on RQ, their one boundary, the reconciler, `expaudit worker`
    selectors    container submissions: the archive or image, the selector run
    sealed       sealed settings: the daily quota, the Ladder, headline-only reports
    auth         tokens, rate limits, each owner's active submissions
    submissions  records, the create request's fields and limits, publishing
    catalog      the settings served: frozen data, downloads, a selector's /input
    store        the object store (a directory or S3)
    process      configuration, documented defaults, metrics, the Redis error table
    errors       the HTTP errors; `client` the Python client of the REST API

Each package's `__init__` names what others may import. Connections (Redis,
the object store, the Docker client) are passed in; importing a module
connects to nothing. Scores are read by `leaderboard.scores`, below the service.
"""

# The failclass HTTP service. Build: docker build -t failclass .
# Run with PostgreSQL: docker compose up (compose.yaml); the entrypoint migrates, then serves.
# The Kubernetes controller's image (adapters/kubernetes/controller.yaml sets its command):
#   docker build --build-arg EXTRAS=kubernetes -t failclass-controller .
FROM python:3.11-slim

# The extras installed with the core (pyproject.toml): the service and its PostgreSQL driver
ARG EXTRAS=service,postgres

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY failclass ./failclass
RUN pip install ".[${EXTRAS}]" && rm -rf /src

COPY docker/entrypoint.sh /usr/local/bin/failclass-entrypoint
RUN useradd --create-home --uid 10001 failclass \
    && mkdir -p /var/lib/failclass/labels \
    && chown -R failclass /var/lib/failclass
USER failclass
WORKDIR /home/failclass

ENV FAILCLASS_HOST=0.0.0.0 \
    FAILCLASS_PORT=8080 \
    FAILCLASS_WORKERS=2 \
    FAILCLASS_LABELS_DIR=/var/lib/failclass/labels
EXPOSE 8080
VOLUME ["/var/lib/failclass"]
# /readyz, not /healthz: a store that answers reads but cannot record (read-only, disk
# full) makes the container unhealthy. An orchestrator with two probes: /healthz for
# liveness, /readyz for readiness.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ['FAILCLASS_PORT'], timeout=2)"]
ENTRYPOINT ["failclass-entrypoint"]

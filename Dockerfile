# storm_py: one image for nimbus, supervisors, the UI relay and the command line.
#   docker build -t storm-py .
#   docker run --rm storm-py version
# The bases are build arguments, so that a site without Docker Hub builds from its own (scripts/local-images.sh
# makes them from Debian): BUILD_BASE has a C compiler and the Python headers, so the wheel gets its hot modules
# compiled (setup.py); BASE, the runtime image's, needs neither.  Each needs Python 3.11 with pip on the PATH.
#   docker build --build-arg BUILD_BASE=my/python:3.11 --build-arg BASE=my/python:3.11-slim -t storm-py .
# STORM_PY_COMPILE=1: a build that cannot compile them fails instead of making a pure-Python image
ARG BUILD_BASE=python:3.11
ARG BASE=python:3.11-slim
FROM ${BUILD_BASE} AS build
WORKDIR /src
ENV STORM_PY_COMPILE=1
COPY pyproject.toml setup.cfg setup.py README.md ./
COPY storm_py ./storm_py
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE}
COPY --from=build /wheels /wheels
# tini as PID 1: SIGTERM reaches the daemon at once (`docker stop` is prompt) and the processes a supervisor's
# workers leave behind are reaped.  storm_py goes into its own virtualenv, whatever the base's Python allows.
RUN if ! command -v tini >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -m venv /opt/storm-py \
    && /opt/storm-py/bin/pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 1000 storm \
    && mkdir -p /var/lib/storm-py /var/log/storm-py /conf /secrets \
    && chown storm:storm /var/lib/storm-py /var/log/storm-py \
    && chown storm:storm /secrets && chmod 700 /secrets
ENV PATH=/opt/storm-py/bin:$PATH
USER storm
WORKDIR /home/storm
# nimbus API, UI relay, worker slots
EXPOSE 6627 8080 6700-6703
ENTRYPOINT ["tini", "--", "storm-py"]
CMD ["--help"]

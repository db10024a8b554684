# storm_py: one image for nimbus, supervisors, the UI relay and the command line.
#   docker build -t storm-py .
#   docker run --rm storm-py version
# the full image has a C compiler, so the wheel gets its hot modules compiled (setup.py); the runtime image does not.
# STORM_PY_COMPILE=1: a build that cannot compile them fails instead of making a pure-Python image
FROM python:3.11 AS build
WORKDIR /src
ENV STORM_PY_COMPILE=1
COPY pyproject.toml setup.cfg setup.py README.md ./
COPY storm_py ./storm_py
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 1000 storm \
    && mkdir -p /var/lib/storm-py /var/log/storm-py /conf /secrets \
    && chown storm:storm /var/lib/storm-py /var/log/storm-py \
    && chown storm:storm /secrets && chmod 700 /secrets
USER storm
WORKDIR /home/storm
# nimbus API, UI relay, worker slots
EXPOSE 6627 8080 6700-6703
ENTRYPOINT ["storm-py"]
CMD ["--help"]

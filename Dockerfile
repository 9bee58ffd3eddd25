FROM python:3.11.7-slim-bookworm
WORKDIR /app
COPY pyproject.toml README.md trawl.toml ./
COPY trawl ./trawl
COPY workflows ./workflows
COPY activities ./activities
COPY workers ./workers
COPY starter ./starter
RUN pip install --no-cache-dir .
ENV TRAWL_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["trawl"]
CMD ["worker"]

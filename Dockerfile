FROM python:3.11.7-slim-bookworm
# ffmpeg merges Bilibili's DASH video and audio at commit; its ffprobe lets verify compare a
# file's duration with the platform's. Without them trawl keeps two files and skips that check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ffmpeg \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md trawl.toml ./
COPY trawl ./trawl
RUN pip install --no-cache-dir . && ffmpeg -version >/dev/null && ffprobe -version >/dev/null
ENV TRAWL_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["trawl"]
CMD ["worker"]

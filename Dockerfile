# One image for web (gunicorn), worker and beat: Python 3.11 with the Pango libraries WeasyPrint needs.
# Debian pinned (bookworm) so the package names below stay valid when the python:3.11-slim tag moves.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# WeasyPrint (PDF notices and forms): Pango, its FreeType backend, HarfBuzz subsetting, and a font.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 app
WORKDIR /app

# Dependencies first (a layer that changes only with pyproject.toml); the project installs no package itself.
COPY pyproject.toml ./
RUN pip install . && rm -rf build *.egg-info

COPY . .
# Static files for whitenoise (DEBUG off); settings need a SECRET_KEY to import, this one is never used.
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && mkdir -p var/media \
    && chown -R app:app var

USER app
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]

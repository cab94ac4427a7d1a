"""Settings, all from the environment (django-environ); a bad value stops the process at start-up.

Without DATABASE_URL / REDIS_URL the app runs on an embedded default: SQLite and kombu's
filesystem transport, so `make run` works on a machine with no servers.
"""

import datetime as dt
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from core.crypto import checked_keys, development_key
from core.dates import EASTERN_NAME

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _bool(name: str, default: bool) -> bool:
    raw = env.str(name, default=str(default)).strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


DEBUG = _bool("DEBUG", False)
TESTING = _bool("TESTING", False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    # No key in the environment: a development machine. Keep one random key per checkout in var/
    # (never in git); production sets SECRET_KEY (docker-compose.yml does).
    if _bool("REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set (REQUIRE_SECRET_KEY is on)")
    _key_file = VAR_DIR / "secret_key"
    if not _key_file.exists():
        import secrets

        VAR_DIR.mkdir(exist_ok=True)
        _key_file.write_text(secrets.token_urlsafe(50))
        _key_file.chmod(0o600)
    SECRET_KEY = _key_file.read_text().strip()
elif len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("SECRET_KEY is too short: use at least 32 random characters")

# The keys of the values encrypted at rest (core/crypto.py: beneficiaries' taxpayer numbers): Fernet keys, comma
# separated, the newest first (it encrypts; every key decrypts). Without them: a development machine, one random key
# per checkout in var/ (never in git; `make clean` removes it with the SQLite database it belongs to). Production
# sets them (docker-compose.yml requires them) and keeps them apart from the database's backups.
FIELD_ENCRYPTION_KEYS = checked_keys(env.list("FIELD_ENCRYPTION_KEYS", default=[]))
if not FIELD_ENCRYPTION_KEYS:
    if _bool("REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS must be set (REQUIRE_SECRET_KEY is on)")
    FIELD_ENCRYPTION_KEYS = [development_key(VAR_DIR / "field_encryption_key")]
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "core.admin_apps.AuditedAdminConfig",  # django.contrib.admin, every change an audit event
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "simple_history",
    "django_celery_beat",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "axes",
    "core",
    "plans",
    "participants",
    "books",
    "elections",
    "pensions",
    "claims",
    "payments",
    "conversion",
    "statements",
    "taxes",
    "operations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "core.signin.middleware.SessionLimitsMiddleware",
    "csp.middleware.CSPMiddleware",
    "core.middleware.LoginRequiredEverywhereMiddleware",
    "core.signin.middleware.SecondFactorRequiredMiddleware",
    "core.middleware.ApplicationErrorMiddleware",
    "plans.middleware.SharedPlanVersionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context_processors.roles",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
DATABASE_URL = env.str("DATABASE_URL", default="")
if DATABASE_URL:
    if not DATABASE_URL.startswith(("postgres://", "postgresql://", "sqlite://")):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be postgres://... or sqlite://..., not {DATABASE_URL.split(':')[0]}://"
        )
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
else:
    VAR_DIR.mkdir(exist_ok=True)
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "nqdc.sqlite3"}}
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # Persistent connections (issue 15): a connection per request cost each page a PostgreSQL backend start, its
    # catalog caches read afresh and the client's set-up, about a quarter of a portal page's CPU; the health check
    # replaces a connection the server dropped before the request uses it. DB_CONN_MAX_AGE=0 closes after each.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    # Server-side binding lets psycopg prepare the statements the batch jobs repeat (planning once).
    if _bool("DB_SERVER_SIDE_BINDING", True):
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("server_side_binding", True)
        DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", 5)
    DATABASES["default"].setdefault("TEST", {"NAME": env.str("TEST_DATABASE_NAME", default="") or None})
    if not DATABASES["default"]["TEST"]["NAME"]:
        DATABASES["default"]["TEST"] = {}
else:
    # SQLite (the embedded default): a transaction takes the write lock when it begins (BEGIN IMMEDIATE), and
    # waits up to `timeout` seconds for it. Begun DEFERRED, a transaction that read first and then writes while
    # another process (the web server, the worker's other child) holds the lock fails at once with "database is
    # locked" instead of waiting: a worker's two children sending two runs' payment advice did exactly that.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 30, "transaction_mode": "IMMEDIATE"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- auth -----------------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses a locked account or address before a password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "core.signin.passwords.NotYourNameValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Sessions: signed out after SESSION_IDLE_MINUTES without a request, and SESSION_MAX_HOURS after signing in
# whatever happens (core.signin.middleware.SessionLimitsMiddleware); the cookie lives no longer than that.
SESSION_IDLE_MINUTES = env.int("SESSION_IDLE_MINUTES", default=30)
SESSION_MAX_HOURS = env.int("SESSION_MAX_HOURS", default=12)
if SESSION_IDLE_MINUTES < 1 or SESSION_MAX_HOURS < 1:
    raise ImproperlyConfigured("SESSION_IDLE_MINUTES and SESSION_MAX_HOURS must be at least 1")
SESSION_COOKIE_AGE = SESSION_MAX_HOURS * 3600
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
# Lockout (django-axes): AXES_FAILURE_LIMIT wrong passwords in a row lock the account, and as many from one
# address lock the address, for AXES_COOLOFF_MINUTES or until staff unlock them (Staff > Sign-in locks, or
# `manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS` / `axes_reset`).
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_COOLOFF_MINUTES = env.int("AXES_COOLOFF_MINUTES", default=60)
AXES_COOLOFF_TIME = dt.timedelta(minutes=AXES_COOLOFF_MINUTES) if AXES_COOLOFF_MINUTES > 0 else None
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
# TOTP second factor (django-otp): required of every staff user, offered to participants; approving a
# payment run, deciding an emergency or an appeal asks for it again once the last check is older than this.
OTP_TOTP_ISSUER = env.str("OTP_TOTP_ISSUER", default="NQDC Plan Administration")
SECOND_FACTOR_FRESH_MINUTES = env.int("SECOND_FACTOR_FRESH_MINUTES", default=15)
RECOVERY_CODE_COUNT = 10
# HTTP Basic on the API sends a password with every request and skips the second factor: development only.
API_BASIC_AUTH = _bool("API_BASIC_AUTH", DEBUG)
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_TIMEOUT", default=3600)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = _bool("SESSION_COOKIE_SECURE", not DEBUG and not TESTING)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# --- transport (issue 12: `manage.py check --deploy` reports nothing with DEBUG off) --------------------
_PRODUCTION = not DEBUG and not TESTING
SECURE_SSL_REDIRECT = _bool("SECURE_SSL_REDIRECT", _PRODUCTION)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container health check asks over plain HTTP inside the host
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if _PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _PRODUCTION)
SECURE_HSTS_PRELOAD = _bool("SECURE_HSTS_PRELOAD", _PRODUCTION)
SECURE_REFERRER_POLICY = "same-origin"
# Behind a TLS-terminating proxy: the header it sets and its value, "HTTP_X_FORWARDED_PROTO,https". Only set it
# when the proxy always sets (or strips) that header, otherwise a client could claim HTTPS.
_proxy_header = [p for p in env.list("SECURE_PROXY_SSL_HEADER", default=[]) if p.strip()]
if _proxy_header:
    if len(_proxy_header) != 2 or not _proxy_header[0].startswith("HTTP_"):
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must be HEADER,value, e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1])
# Content-Security-Policy (django-csp): scripts, styles and images from this site only; no inline code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- i18n / time ----------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = EASTERN_NAME  # display only; datetimes are stored in UTC
USE_I18N = True
USE_TZ = True

# --- files ----------------------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
if not DEBUG and not TESTING:
    # gunicorn serves static/ itself (collectstatic fills STATIC_ROOT when the image is built).
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "whitenoise.middleware.WhiteNoiseMiddleware",
    )
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
# `bench pages` starts gunicorn with QUERY_COUNT_HEADER=true: every response carries its query count (X-Queries).
QUERY_COUNT_HEADER = _bool("QUERY_COUNT_HEADER", False)
if QUERY_COUNT_HEADER:
    MIDDLEWARE.insert(0, "core.middleware.QueryCountHeaderMiddleware")
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "/media-not-served/"  # documents are served through permission-checked views only
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# --- email ----------------------------------------------------------------------------------
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="benefits-committee@example.com")
# Production: EMAIL_URL (e.g. smtp+tls://user:password@mail.example.com:587) sets the SMTP backend and server.
if env.str("EMAIL_URL", default=""):
    globals().update(env.email_url("EMAIL_URL"))
EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))  # the file backend's folder
# The address the links in notices start with (core.notices.absolute_link).
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000")

# --- Celery ---------------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured("REDIS_URL must start with redis:// or rediss://")
CELERY_LONGEST_TASK_SECONDS = env.int("CELERY_LONGEST_TASK_SECONDS", default=2 * 3600)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
else:
    _queue = VAR_DIR / "celery-queue"
    (_queue / "processed").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue),
        "data_folder_out": str(_queue),
        "processed_folder": str(_queue / "processed"),
        "control_folder": str(_queue / "control"),  # the exchange tables; kombu's default is ./control
        "store_processed": False,
    }
if REDIS_URL:
    # Money-moving work: a task is redelivered only if no worker acknowledged it within a
    # window longer than the longest task, so a slow task is never run twice at once. A task whose
    # worker was killed (SIGKILL, OOM) is restored by a worker when the window has passed (at its
    # start, then every few minutes); CELERY_VISIBILITY_TIMEOUT shortens it (the crash tests do).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=CELERY_LONGEST_TASK_SECONDS * 2),
    }
# The cache holds the API throttle counts: shared by every gunicorn worker through Redis; tests and the
# no-server default keep them in the process.
if REDIS_URL and not TESTING:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "nqdc-cache",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Payments the daily payment job values or closes per committed batch (the crash tests use a few).
PAYMENT_JOB_BATCH = env.int("PAYMENT_JOB_BATCH", default=2000)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = CELERY_LONGEST_TASK_SECONDS
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = EASTERN_NAME
# django-celery-beat's database schedule; a task due while Redis is down is sent when it returns (core.beat).
CELERY_BEAT_SCHEDULER = "core.beat:DatabaseScheduler"
CELERY_TASK_ALWAYS_EAGER = _bool("CELERY_TASK_ALWAYS_EAGER", False)

# --- DRF ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"]
    + (["rest_framework.authentication.BasicAuthentication"] if API_BASIC_AUTH else []),
    "DEFAULT_PERMISSION_CLASSES": ["core.permissions.DenyAll"],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_THROTTLE_ANON", default="30/minute"),
        "user": env.str("API_THROTTLE_USER", default="600/minute"),
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "COERCE_DECIMAL_TO_STRING": True,
    "EXCEPTION_HANDLER": "core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "NQDC plan administration API",
    "DESCRIPTION": "Imports (participants, prices, payroll) and reads of plan books. Every endpoint is deny-by-default.",
    "VERSION": "1.0.0",
    "SERVE_PERMISSIONS": ["core.permissions.IsStaffReader"],  # staff only: participants get 403
    "SWAGGER_UI_DIST": "/static/vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/static/vendor/swagger-ui/favicon-32x32.png",
    # No call to an outside host at run time: Swagger UI's default validator badge is online.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "/static/vendor/redoc",
}

# --- logging --------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# --- the product ----------------------------------------------------------------------------
PLAN_CATALOG_DIR = BASE_DIR / "plans" / "catalog"
CALENDAR_FIRST_YEAR = 2005
CALENDAR_LAST_YEAR = 2060

# --- quotas (issue 12) -------------------------------------------------------------------------
# Imports: a file over either limit is refused before it is read; at most this many problems are stored.
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=20 * 1024 * 1024)
IMPORT_MAX_ROWS = env.int("IMPORT_MAX_ROWS", default=250_000)
IMPORT_MAX_ERRORS_STORED = env.int("IMPORT_MAX_ERRORS_STORED", default=200)
# Claims filed in the portal or the API: attachments per claim and per person (count and bytes), filings a day.
CLAIM_ATTACHMENTS_PER_CLAIM = env.int("CLAIM_ATTACHMENTS_PER_CLAIM", default=20)
CLAIM_ATTACHMENT_BYTES_PER_CLAIM = env.int("CLAIM_ATTACHMENT_BYTES_PER_CLAIM", default=50 * 1024 * 1024)
CLAIM_ATTACHMENTS_PER_PERSON = env.int("CLAIM_ATTACHMENTS_PER_PERSON", default=100)
CLAIM_ATTACHMENT_BYTES_PER_PERSON = env.int("CLAIM_ATTACHMENT_BYTES_PER_PERSON", default=200 * 1024 * 1024)
CLAIM_FILINGS_PER_DAY = env.int("CLAIM_FILINGS_PER_DAY", default=10)

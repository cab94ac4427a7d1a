import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from core import valuation_calendar  # noqa: E402 (the apps are loaded by get_wsgi_application above)

# Garbage collection in a web worker (issue 15). A page allocates tens of thousands of short-lived objects, which
# at the default threshold (a collection every 700) ran the collector about three times a request, and now and then
# over every object of Django, the apps and the URL patterns. The objects loaded at start-up live as long as the
# worker, so they are moved out of the collector's sight (gc.freeze), and the youngest generation is
# collected every 20,000 allocations; reference counting still frees nearly everything at once, the collector
# only finds cycles, later. Measured over the bench pages' list: the collector's time about halved.
import_module(settings.ROOT_URLCONF)  # the URL patterns and every view module, loaded before the freeze
# A worker's first page paid about 0.85 s of CPU against 0.03 s for the next (bench pages at 100,020: the portal home
# p95 above a second): the exchange calendar built from pandas holiday rules (0.4 s) and the URL resolver's reverse
# index (0.2 s). Both are built here, once per worker, before the freeze.
valuation_calendar.sessions_warm()
get_resolver().reverse_dict  # noqa: B018 (the property builds the reverse index)
gc.collect()
gc.freeze()
gc.set_threshold(20_000, 10, 10)

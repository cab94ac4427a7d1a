"""Staff and portal pages of the books."""
from __future__ import annotations

from django.shortcuts import render

from core.decorators import participant_required


@participant_required
def portal_overview(request):
    person = request.user.person
    return render(request, "books/portal_overview.html", {"person": person})

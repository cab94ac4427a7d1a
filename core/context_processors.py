from core.roles import capabilities_of, is_participant_user, is_staff_user, roles_of


def roles(request):
    user = getattr(request, "user", None)
    return {
        "user_roles": sorted(r.value for r in roles_of(user)),
        "user_caps": {c.value for c in capabilities_of(user)},
        "is_staff_user": is_staff_user(user),
        "is_participant_user": is_participant_user(user),
    }

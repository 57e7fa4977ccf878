#!/bin/sh
# What the official nginx image does at start: every
# /etc/nginx/templates/NAME.template becomes /etc/nginx/conf.d/NAME with the
# environment's variables substituted (only those that are set).
set -eu
defined="$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/${\1}/p' | tr '\n' ' ')"
for template in /etc/nginx/templates/*.template; do
  [ -e "$template" ] || continue
  target="/etc/nginx/conf.d/$(basename "$template" .template)"
  envsubst "$defined" < "$template" > "$target"
done
exec "$@"

#!/usr/bin/with-contenv bash
exec sleep 1000

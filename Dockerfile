# The relay as a container image, made from the release binaries of ./build.sh dist: the one
# binary (the page is inside it) on distroless's static base, which has no shell and no package
# manager and runs as a non-root user (65532, home /home/nonroot). Build and run it as docs/server.md
# says ("Running in a container"):
#
#   ./build.sh dist
#   docker build -t voicebox .
#   docker run -p 8787:8787 -v voicebox-state:/home/nonroot voicebox
FROM gcr.io/distroless/static-debian12:nonroot

# TARGETARCH (amd64, arm64) is set by the builder for the platform being built.
ARG TARGETARCH
COPY dist/relay-linux-${TARGETARCH} /relay

# The host state (token, pairings, keys, settings, extensions, certificates, control socket). A
# volume mounted on /home/nonroot starts with the image's ownership of it, so the relay can write.
ENV VOICEBOX_STATE_DIR=/home/nonroot/state
VOLUME ["/home/nonroot"]

# In a container the relay must listen beyond loopback, which it does only with the session gate
# on: the page then needs the one-time sign-in address the relay prints (docker logs).
ENV VOICEBOX_LOOPBACK_AUTH=1
EXPOSE 8787
ENTRYPOINT ["/relay"]
CMD ["serve", "--addr", "0.0.0.0:8787"]

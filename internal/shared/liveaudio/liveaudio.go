// Package liveaudio holds the bounds of the live voice session's audio that the relay's /live
// door and the page's live worker (public/live-worker.js, through internal/pagerules) both hold a
// frame to, so the two cannot drift apart.
package liveaudio

// MaxFrameBytes bounds one binary frame of PCM16 from the page's microphone (about 340 ms at
// 24 kHz; the page sends 10 ms frames). The relay answers a larger frame live-audio-frame-invalid;
// the page's live worker refuses it the same way before it reaches the socket.
const MaxFrameBytes = 16 << 10

//go:build !js

package harness

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
)

// The shared browser's microphone is Chromium's fake capture device playing FakeMicFile, a WAV
// the harness writes before the browser starts: FakeMicHz as PCM16 mono at FakeMicRate, at half
// of full scale, looped by Chromium. Permission prompts for media are granted without a person.
const (
	FakeMicHz   = 440
	FakeMicRate = 48000
	// fakeMicMs is the file's length; Chromium loops it.
	fakeMicMs = 2000
)

// fakeMicFile is the WAV's name in the browser's profile directory.
const fakeMicFile = "fake-mic.wav"

// writeFakeMic writes the fake microphone's WAV into dir and returns its path.
func writeFakeMic(dir string) (string, error) {
	n := FakeMicRate * fakeMicMs / 1000
	data := make([]byte, 2*n)
	for i := range n {
		v := int16(math.Round(math.Sin(2*math.Pi*FakeMicHz*float64(i)/FakeMicRate) * 32767 / 2))
		binary.LittleEndian.PutUint16(data[2*i:], uint16(v))
	}
	hdr := make([]byte, 44)
	copy(hdr[0:], "RIFF")
	binary.LittleEndian.PutUint32(hdr[4:], uint32(36+len(data)))
	copy(hdr[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(hdr[16:], 16) // fmt chunk size
	binary.LittleEndian.PutUint16(hdr[20:], 1)  // PCM
	binary.LittleEndian.PutUint16(hdr[22:], 1)  // mono
	binary.LittleEndian.PutUint32(hdr[24:], FakeMicRate)
	binary.LittleEndian.PutUint32(hdr[28:], FakeMicRate*2) // bytes per second
	binary.LittleEndian.PutUint16(hdr[32:], 2)             // block align
	binary.LittleEndian.PutUint16(hdr[34:], 16)            // bits per sample
	copy(hdr[36:], "data")
	binary.LittleEndian.PutUint32(hdr[40:], uint32(len(data)))
	path := filepath.Join(dir, fakeMicFile)
	return path, os.WriteFile(path, append(hdr, data...), 0o644)
}

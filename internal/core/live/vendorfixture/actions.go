package vendorfixture

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// chunkBytes is the size of the audio pieces the fixture sends (100 ms at 24 kHz).
const chunkBytes = 4800

// ToolCall is a call the fixture makes as the model. Args is the arguments' JSON text as the
// vendor would send it (for OpenAI it may be malformed on purpose).
type ToolCall struct {
	ID, Name, Args string
}

// Ack acknowledges the setup: session.updated (OpenAI) or setupComplete (Gemini). A script with
// NoAck calls it when it chooses.
func (c *Conn) Ack() {
	c.mu.Lock()
	c.acked = true
	session := c.lastSession
	c.mu.Unlock()
	if c.Vendor == OpenAI {
		if session == nil {
			session = json.RawMessage(`{"type":"realtime"}`)
		}
		c.SendJSON(map[string]any{"type": "session.updated", "event_id": c.id("event"), "session": session})
		return
	}
	c.Send([]byte(`{"setupComplete":{}}`))
}

func (c *Conn) ackOpenAI(session json.RawMessage) {
	c.mu.Lock()
	c.lastSession = session
	c.mu.Unlock()
	c.Ack()
}

// Say answers as the model: the audio pcm (24 kHz PCM16) in chunks with text as its transcript,
// then the end of the turn. OpenAI: one whole response, from response.created to response.done;
// Gemini: modelTurn audio parts, outputTranscription, turnComplete.
func (c *Conn) Say(text string, pcm []byte) { c.say(text, pcm, nil) }

// SayInRealTime answers as Say does, with the audio's chunks sent as a vendor streaming speech as
// it makes it: each when the audio before it has had time to play (the first at once), on a
// schedule kept from the start, so a late send does not delay the ones after it. It returns how
// late each chunk left against that schedule (a busy machine wakes the fixture late).
func (c *Conn) SayInRealTime(text string, pcm []byte) (late []time.Duration) {
	start := time.Now()
	c.say(text, pcm, func(sent int) {
		due := start.Add(time.Duration(sent/2) * time.Second / 24000)
		time.Sleep(time.Until(due))
		late = append(late, time.Since(due))
	})
	return late
}

// say sends the answer; before each audio chunk, wait (when not nil) is given the bytes sent so far.
func (c *Conn) say(text string, pcm []byte, wait func(sent int)) {
	sent := 0
	next := func(n int) []byte {
		if wait != nil {
			wait(sent)
		}
		sent += n
		return pcm[:n]
	}
	if c.Vendor == Gemini {
		for len(pcm) > 0 {
			n := min(chunkBytes, len(pcm))
			c.SendJSON(map[string]any{"serverContent": map[string]any{"modelTurn": map[string]any{"parts": []any{
				map[string]any{"inlineData": map[string]string{"mimeType": "audio/pcm;rate=24000", "data": base64.StdEncoding.EncodeToString(next(n))}}}}}})
			pcm = pcm[n:]
		}
		if text != "" {
			c.SendJSON(map[string]any{"serverContent": map[string]any{"outputTranscription": map[string]string{"text": text}}})
		}
		c.SendJSON(map[string]any{"serverContent": map[string]any{"generationComplete": true}})
		c.SendJSON(map[string]any{"serverContent": map[string]any{"turnComplete": true}})
		return
	}
	resp := c.startResponse()
	var output []any
	if len(pcm) > 0 || text != "" {
		itemID := c.id("item")
		item := map[string]any{"id": itemID, "object": "realtime.item", "type": "message", "role": "assistant", "status": "in_progress"}
		c.SendJSON(map[string]any{"type": "response.output_item.added", "event_id": c.id("event"), "response_id": resp, "output_index": 0, "item": item})
		c.SendJSON(map[string]any{"type": "response.content_part.added", "event_id": c.id("event"), "response_id": resp, "item_id": itemID, "output_index": 0, "content_index": 0, "part": map[string]string{"type": "audio"}})
		for len(pcm) > 0 {
			n := min(chunkBytes, len(pcm))
			c.SendJSON(map[string]any{"type": "response.output_audio.delta", "event_id": c.id("event"), "response_id": resp, "item_id": itemID, "output_index": 0, "content_index": 0, "delta": base64.StdEncoding.EncodeToString(next(n))})
			pcm = pcm[n:]
		}
		if text != "" {
			c.SendJSON(map[string]any{"type": "response.output_audio_transcript.delta", "event_id": c.id("event"), "response_id": resp, "item_id": itemID, "output_index": 0, "content_index": 0, "delta": text})
			c.SendJSON(map[string]any{"type": "response.output_audio_transcript.done", "event_id": c.id("event"), "response_id": resp, "item_id": itemID, "output_index": 0, "content_index": 0, "transcript": text})
		}
		c.SendJSON(map[string]any{"type": "response.output_audio.done", "event_id": c.id("event"), "response_id": resp, "item_id": itemID, "output_index": 0, "content_index": 0})
		item["status"] = "completed"
		c.SendJSON(map[string]any{"type": "response.output_item.done", "event_id": c.id("event"), "response_id": resp, "output_index": 0, "item": item})
		output = append(output, item)
	}
	c.endResponse(resp, output)
}

func (c *Conn) startResponse() string {
	resp := c.id("resp")
	c.mu.Lock()
	c.active = true
	c.mu.Unlock()
	c.SendJSON(map[string]any{"type": "response.created", "event_id": c.id("event"),
		"response": map[string]any{"id": resp, "object": "realtime.response", "status": "in_progress", "output": []any{}}})
	return resp
}

func (c *Conn) endResponse(resp string, output []any) {
	c.mu.Lock()
	wasActive := c.active
	c.active = false
	c.mu.Unlock()
	if !wasActive {
		return // cancelled meanwhile; the cancel sent its own response.done
	}
	if output == nil {
		output = []any{}
	}
	c.SendJSON(map[string]any{"type": "response.done", "event_id": c.id("event"),
		"response": map[string]any{"id": resp, "object": "realtime.response", "status": "completed", "output": output}})
}

// Hear reports what the person said, as the vendor's transcription of their audio.
func (c *Conn) Hear(text string) {
	if c.Vendor == Gemini {
		c.SendJSON(map[string]any{"serverContent": map[string]any{"inputTranscription": map[string]string{"text": text}}})
		return
	}
	c.SendJSON(map[string]any{"type": "conversation.item.input_audio_transcription.completed", "event_id": c.id("event"),
		"item_id": c.id("item"), "content_index": 0, "transcript": text})
}

// CallTools makes the calls as the model, in one response (OpenAI: through response.done) or one
// toolCall message (Gemini).
func (c *Conn) CallTools(calls ...ToolCall) { c.CallToolsHeld(calls...)() }

// CallToolsHeld makes the calls like CallTools but, for OpenAI, holds the response open: the
// returned function sends its response.done. For Gemini it does nothing.
func (c *Conn) CallToolsHeld(calls ...ToolCall) (done func()) {
	c.mu.Lock()
	for _, call := range calls {
		c.outstanding[call.ID] = true
	}
	c.mu.Unlock()
	if c.Vendor == Gemini {
		fcs := make([]any, 0, len(calls))
		for _, call := range calls {
			fcs = append(fcs, map[string]any{"id": call.ID, "name": call.Name, "args": json.RawMessage(call.Args)})
		}
		c.SendJSON(map[string]any{"toolCall": map[string]any{"functionCalls": fcs}})
		return func() {}
	}
	resp := c.startResponse()
	var output []any
	for i, call := range calls {
		item := map[string]any{"id": c.id("item"), "object": "realtime.item", "type": "function_call", "status": "in_progress", "call_id": call.ID, "name": call.Name, "arguments": ""}
		c.SendJSON(map[string]any{"type": "response.output_item.added", "event_id": c.id("event"), "response_id": resp, "output_index": i, "item": item})
		c.SendJSON(map[string]any{"type": "response.function_call_arguments.delta", "event_id": c.id("event"), "response_id": resp, "item_id": item["id"], "output_index": i, "call_id": call.ID, "delta": call.Args})
		c.SendJSON(map[string]any{"type": "response.function_call_arguments.done", "event_id": c.id("event"), "response_id": resp, "item_id": item["id"], "output_index": i, "call_id": call.ID, "name": call.Name, "arguments": call.Args})
		item["status"], item["arguments"] = "completed", call.Args
		c.SendJSON(map[string]any{"type": "response.output_item.done", "event_id": c.id("event"), "response_id": resp, "output_index": i, "item": item})
		output = append(output, item)
	}
	return func() { c.endResponse(resp, output) }
}

// SpeechStarted reports that the person began to speak over the model: OpenAI's
// input_audio_buffer.speech_started, Gemini's interrupted.
func (c *Conn) SpeechStarted() {
	if c.Vendor == Gemini {
		c.SendJSON(map[string]any{"serverContent": map[string]any{"interrupted": true}})
		return
	}
	c.SendJSON(map[string]any{"type": "input_audio_buffer.speech_started", "event_id": c.id("event"), "audio_start_ms": 0, "item_id": c.id("item")})
}

// GoAway announces (Gemini) that the connection will close after timeLeft, such as "10s".
func (c *Conn) GoAway(timeLeft string) {
	c.SendJSON(map[string]any{"goAway": map[string]string{"timeLeft": timeLeft}})
}

// CancelCalls withdraws calls (Gemini's toolCallCancellation).
func (c *Conn) CancelCalls(ids ...string) {
	c.mu.Lock()
	for _, id := range ids {
		delete(c.outstanding, id)
	}
	c.mu.Unlock()
	c.SendJSON(map[string]any{"toolCallCancellation": map[string]any{"ids": ids}})
}

// The globals the classic scripts apps load put on window and document (mini-app-sdk.js,
// mini-app-guest.js). A model context may also come from the browser or from an app's own
// script, so its shape is never trusted: every member is looked at before use.

interface Window {
  webMcp?: { sdk?: string };
  VoiceboxGuest?: unknown;
}

interface Document {
  modelContext?: any;
}

interface Navigator {
  modelContext?: any;
}

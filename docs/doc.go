// Package docs holds the project's documentation pages (Markdown, for readers). Its test
// checks every Markdown file of the repository against the code: relative links and
// anchors resolve, environment variables named exist in the code, and routes named are
// served by the router.
package docs

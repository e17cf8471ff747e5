/**
 * A stdio MCP server in plain POSIX `sh` (no node, python or jq): one tool, `kernel`, answering with
 * `uname -s`. It matches requests by their method and echoes the client's protocol version, enough
 * for the MCP SDK's client; it stands for a server an image ships without node.
 */
export const SH_MCP_SERVER = `#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^.*"id":\\([0-9][0-9]*\\).*$/\\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      version=$(printf '%s' "$line" | sed -n 's/^.*"protocolVersion":"\\([^"]*\\)".*$/\\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"sh-server","version":"1.0.0"}}}\\n' "$id" "$version" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"kernel","description":"The kernel name","inputSchema":{"type":"object","properties":{}}}]}}\\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}\\n' "$id" "$(uname -s)" ;;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\\n' "$id" ;;
  esac
done
`;

/**
 * The HTTP App contract (docs/apps.md, one source) as a section of the `/docs` page. The gateway
 * image copies the file beside `services/`; its headings move one level down under the API's title.
 */
import { readFileSync } from 'node:fs';

const CONTRACT = new URL('../../../docs/apps.md', import.meta.url);

export function appContractMarkdown(): string {
  let text: string;
  try {
    text = readFileSync(CONTRACT, 'utf8');
  } catch {
    return '## Write an App\n\nThe HTTP App contract is docs/apps.md in the Islet repository.';
  }
  return text.replace(/^(#+) /gm, '#$1 ');
}

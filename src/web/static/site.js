// The reader's pages, enhanced: "Another one" without a reload, copying a link or a text, and the
// report dialog. Every page works without this script (links and a plain form), so it only adds.
import { copyFrom } from './site/copy.js';
import { another } from './site/entry-view.js';
import { closeReport, openReport } from './site/report.js';

for (const button of document.querySelectorAll('[data-action=copy-link], [data-action=copy-text]')) if (button instanceof HTMLElement) button.hidden = false;

// One listener for every action on the page.
document.addEventListener('click', async (event) => {
  const target = event.target instanceof Element ? event.target.closest('[data-action]') : null;
  if (!(target instanceof HTMLElement) || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  switch (target.dataset.action) {
    case 'another':
      event.preventDefault();
      if (!(await another(target)) && target instanceof HTMLAnchorElement) location.assign(target.href);
      break;
    case 'copy-link':
      await copyFrom(target, 'link');
      break;
    case 'copy-text':
      await copyFrom(target, 'text');
      break;
    case 'report':
      if (openReport(target)) event.preventDefault();
      break;
    case 'close-dialog':
      closeReport();
      break;
  }
});
